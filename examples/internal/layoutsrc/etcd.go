package layoutsrc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// The processes reach etcd through its JSON gateway (POST /v3/..., which
// every etcd serves on its client URLs), not through etcd's Go client:
// that client registers etcd's generated protobuf file "rpc.proto", and
// go-libp2p-pubsub, which the ingest node links for gossip, registers a
// file of the same name, so a binary with both panics at start
// (libp2p/go-libp2p-pubsub#729, etcd-io/etcd#19682). The keys and values
// are those of package scatter/keyspace/etcdlayout, which the coordinator
// uses; TestSameKeysAsEtcdlayout checks that the two agree.

// Keys under the prefix, as etcdlayout names them.
const (
	keyLayout = "layout"
	keyLive   = "live/"
)

// Scheme is the URL scheme of an etcd layout.
const Scheme = "etcd"

// DefaultPrefix is the key prefix of an etcd URL without a path.
const DefaultPrefix = "indexkit/keyspace/"

// DefaultTTL is a presence's lease TTL unless set (etcdlayout's).
const DefaultTTL = 5 * time.Second

// ErrNoLayout is wrapped by Load when no layout was ever published.
var ErrNoLayout = errors.New("layoutsrc: no layout published in etcd")

// IsURL reports whether spec names an etcd layout.
func IsURL(spec string) bool { return strings.HasPrefix(spec, Scheme+"://") }

// ParseURL splits etcd://HOST:PORT[,HOST:PORT...]/PREFIX into the client
// endpoints (http://HOST:PORT) and the key prefix, exactly as
// etcdlayout.ParseURL does.
func ParseURL(spec string) (endpoints []string, prefix string, err error) {
	u, err := url.Parse(spec)
	if err != nil || u.Scheme != Scheme || u.Host == "" {
		return nil, "", fmt.Errorf("%w: %q is not etcd://HOST:PORT[,HOST:PORT...]/PREFIX", keyspace.ErrInvalidLayout, spec)
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, "", fmt.Errorf("%w: %q has an empty endpoint", keyspace.ErrInvalidLayout, spec)
		}
		endpoints = append(endpoints, "http://"+h)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return endpoints, prefix, nil
}

// gateway is a client of etcd's JSON gateway over a list of endpoints;
// a request that fails at one endpoint moves the next requests to the
// next endpoint.
type gateway struct {
	eps    []string
	prefix string
	hc     *http.Client
	next   atomic.Uint32 // the endpoint to use
}

func newGateway(eps []string, prefix string) *gateway {
	return &gateway{eps: eps, prefix: prefix, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

func (g *gateway) endpoint() (string, uint32) {
	i := g.next.Load()
	return g.eps[int(i)%len(g.eps)], i
}

// failed moves on from endpoint i (unless another request already has).
func (g *gateway) failed(i uint32) { g.next.CompareAndSwap(i, i+1) }

// rpcError is an error etcd answered with.
type rpcError struct {
	Status  int
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("etcd answered %d: %s (code %d)", e.Status, e.Message, e.Code)
}

// leaseGone reports whether err says the lease does not exist.
func leaseGone(err error) bool {
	var re *rpcError
	return errors.As(err, &re) && strings.Contains(re.Message, "lease not found")
}

// call POSTs req as JSON to path and decodes the answer into resp.
func (g *gateway) call(ctx context.Context, path string, req, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ep, i := g.endpoint()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	r, err := g.hc.Do(hr)
	if err != nil {
		g.failed(i)
		return fmt.Errorf("layoutsrc: etcd %s%s: %w", ep, path, err)
	}
	defer r.Body.Close()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		g.failed(i)
		return fmt.Errorf("layoutsrc: etcd %s%s: %w", ep, path, err)
	}
	if r.StatusCode != http.StatusOK {
		re := &rpcError{Status: r.StatusCode}
		if json.Unmarshal(body, re) != nil || re.Message == "" {
			re.Message = strings.TrimSpace(string(body))
		}
		if r.StatusCode >= 500 && !strings.Contains(re.Message, "lease not found") {
			g.failed(i)
		}
		return fmt.Errorf("layoutsrc: etcd %s%s: %w", ep, path, re)
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("layoutsrc: etcd %s%s: the answer does not read: %w", ep, path, err)
	}
	return nil
}

// The gateway's JSON: bytes as base64, 64-bit integers as strings.
type (
	header struct {
		Revision int64 `json:"revision,string"`
	}
	kv struct {
		Key         []byte `json:"key"`
		Value       []byte `json:"value"`
		ModRevision int64  `json:"mod_revision,string"`
	}
	rangeResp struct {
		Header header `json:"header"`
		Kvs    []kv   `json:"kvs"`
	}
	leaseResp struct {
		ID  int64 `json:"ID,string"`
		TTL int64 `json:"TTL,string"`
	}
	putReq struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
		Lease int64  `json:"lease,string,omitempty"`
	}
	watchEvent struct {
		Type string `json:"type"` // "" (PUT) or "DELETE"
		Kv   kv     `json:"kv"`
	}
	watchResp struct {
		Result *struct {
			Header   header       `json:"header"`
			Created  bool         `json:"created"`
			Canceled bool         `json:"canceled"`
			Reason   string       `json:"cancel_reason"`
			Events   []watchEvent `json:"events"`
		} `json:"result"`
		Error *rpcError `json:"error"`
	}
)

func decodeLayout(v []byte, rev int64) (keyspace.Layout, error) {
	var l keyspace.Layout
	if err := json.Unmarshal(v, &l); err != nil {
		return keyspace.Layout{}, fmt.Errorf("%w: etcd revision %d: %w", keyspace.ErrInvalidLayout, rev, err)
	}
	if err := l.Validate(); err != nil {
		return keyspace.Layout{}, fmt.Errorf("etcd revision %d: %w", rev, err)
	}
	return l, nil
}

// load reads the layout key: the layout and its ModRevision.
func (g *gateway) load(ctx context.Context) (keyspace.Layout, int64, error) {
	var r rangeResp
	if err := g.call(ctx, "/v3/kv/range", map[string]any{"key": []byte(g.prefix + keyLayout)}, &r); err != nil {
		return keyspace.Layout{}, 0, err
	}
	if len(r.Kvs) == 0 {
		return keyspace.Layout{}, 0, fmt.Errorf("%w under %q", ErrNoLayout, g.prefix)
	}
	l, err := decodeLayout(r.Kvs[0].Value, r.Kvs[0].ModRevision)
	return l, r.Kvs[0].ModRevision, err
}

// watch calls apply with the layout in force and each later one until
// ctx ends, as etcdlayout.Store.Watch does: a watch stream that requires
// a leader, started again (at the next endpoint) whenever it breaks.
func (g *gateway) watch(ctx context.Context, apply func(keyspace.Layout) error, onError func(error)) error {
	report := func(err error) {
		if err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
	}
	var lastRev int64
	for ctx.Err() == nil {
		l, rev, err := g.load(ctx)
		if err != nil {
			report(err)
			if !sleep(ctx, retryDelay) {
				return nil
			}
			continue
		}
		if rev != lastRev {
			report(apply(l))
			lastRev = rev
		}
		if err := g.stream(ctx, lastRev+1, func(ev watchEvent) {
			if ev.Type == "DELETE" {
				report(fmt.Errorf("%w: the layout key %s was deleted", keyspace.ErrInvalidLayout, g.prefix+keyLayout))
				return
			}
			lastRev = ev.Kv.ModRevision
			l, err := decodeLayout(ev.Kv.Value, ev.Kv.ModRevision)
			if err != nil {
				report(err)
				return
			}
			report(apply(l))
		}); err != nil {
			report(err)
		}
		if !sleep(ctx, retryDelay) {
			return nil
		}
	}
	return nil
}

// stream runs one watch of the layout key from revision from, calling
// on with each event, until the stream breaks or ctx ends.
func (g *gateway) stream(ctx context.Context, from int64, on func(watchEvent)) error {
	req, _ := json.Marshal(map[string]any{"create_request": map[string]any{
		"key": []byte(g.prefix + keyLayout), "start_revision": strconv.FormatInt(from, 10)}})
	ep, i := g.endpoint()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+"/v3/watch", bytes.NewReader(req))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	// etcd's WithRequireLeader: a member cut off from the quorum cancels
	// the watch instead of leaving it silent.
	hr.Header.Set("Grpc-Metadata-Hasleader", "true")
	r, err := g.hc.Do(hr)
	if err != nil {
		g.failed(i)
		return fmt.Errorf("layoutsrc: watch %s at %s: %w", g.prefix+keyLayout, ep, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		g.failed(i)
		return fmt.Errorf("layoutsrc: watch %s at %s: status %s", g.prefix+keyLayout, ep, r.Status)
	}
	dec := json.NewDecoder(bufio.NewReader(r.Body))
	for {
		var wr watchResp
		if err := dec.Decode(&wr); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			g.failed(i)
			return fmt.Errorf("layoutsrc: watch %s at %s: %w", g.prefix+keyLayout, ep, err)
		}
		switch {
		case wr.Error != nil:
			g.failed(i)
			return fmt.Errorf("layoutsrc: watch %s at %s: %w", g.prefix+keyLayout, ep, wr.Error)
		case wr.Result == nil:
			continue
		case wr.Result.Canceled:
			g.failed(i)
			return fmt.Errorf("layoutsrc: watch %s at %s cancelled: %s", g.prefix+keyLayout, ep, wr.Result.Reason)
		}
		for _, ev := range wr.Result.Events {
			on(ev)
		}
	}
}

// retryDelay is the pause before a broken watch is started again.
const retryDelay = 200 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// PresenceConfig configures [Source.Join]; its fields are those of
// etcdlayout.PresenceConfig.
type PresenceConfig struct {
	// Role and Name place the process's key at live/<Role>/<Name>: Role
	// keyspace.RoleQuery, RoleIngest or RoleFront, Name the process's
	// name in the layout (any unique name for a front end). Required.
	Role, Name string
	// Status returns the process's status; Join writes it, and again
	// whenever it changes. Required.
	Status func() keyspace.Status
	// TTL is the lease's time to live (0: [DefaultTTL]; whole seconds).
	TTL time.Duration
	// Interval is how often Status is read to see whether it changed
	// (0: 100 ms); the lease is renewed every TTL/3.
	Interval time.Duration
}

// Presence keeps a process's status under a lease key, as
// etcdlayout.Presence does, with the same fencing rule: the key is sure
// to exist until TTL after the last renewal etcd confirmed was sent;
// past that moment [Presence.Fenced] reports true.
type Presence struct {
	g   *gateway
	cfg PresenceConfig
	key string

	mu         sync.Mutex
	validUntil time.Time
	lease      int64
	last       []byte

	cancel context.CancelFunc
	done   chan struct{}
	closed atomic.Bool
}

func (g *gateway) join(ctx context.Context, cfg PresenceConfig) (*Presence, error) {
	switch {
	case cfg.Role == "" || cfg.Name == "":
		return nil, errors.New("layoutsrc: PresenceConfig needs Role and Name")
	case cfg.Status == nil:
		return nil, errors.New("layoutsrc: PresenceConfig.Status is required")
	case cfg.TTL < 0 || cfg.TTL%time.Second != 0:
		return nil, fmt.Errorf("layoutsrc: PresenceConfig.TTL %v must be whole seconds (etcd lease TTLs are)", cfg.TTL)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	p := &Presence{g: g, cfg: cfg, key: g.prefix + keyLive + cfg.Role + "/" + cfg.Name, done: make(chan struct{})}
	if err := p.grant(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(rctx)
	return p, nil
}

func (p *Presence) encode() []byte {
	st := p.cfg.Status()
	st.Role, st.Name = p.cfg.Role, p.cfg.Name
	b, _ := json.Marshal(st)
	return b
}

// grant takes a new lease and writes the status under it.
func (p *Presence) grant(ctx context.Context) error {
	sent := time.Now()
	var lr leaseResp
	if err := p.g.call(ctx, "/v3/lease/grant", map[string]any{"TTL": strconv.FormatInt(int64(p.cfg.TTL/time.Second), 10)}, &lr); err != nil {
		return fmt.Errorf("layoutsrc: grant the lease of %s: %w", p.key, err)
	}
	b := p.encode()
	var out json.RawMessage
	if err := p.g.call(ctx, "/v3/kv/put", putReq{Key: []byte(p.key), Value: b, Lease: lr.ID}, &out); err != nil {
		return fmt.Errorf("layoutsrc: write %s: %w", p.key, err)
	}
	p.mu.Lock()
	p.lease, p.last, p.validUntil = lr.ID, b, sent.Add(time.Duration(lr.TTL)*time.Second)
	p.mu.Unlock()
	return nil
}

func (p *Presence) run(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	renewEvery := p.cfg.TTL / 3
	lastRenew := time.Now()
	lost := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.mu.Lock()
		id := p.lease
		p.mu.Unlock()
		if lost {
			gctx, cancel := context.WithTimeout(ctx, renewEvery)
			err := p.grant(gctx)
			cancel()
			if err == nil {
				lost, lastRenew = false, time.Now()
			}
			continue
		}
		if time.Since(lastRenew) >= renewEvery {
			sent := time.Now()
			rctx, cancel := context.WithTimeout(ctx, renewEvery)
			var kr struct {
				Result *leaseResp `json:"result"`
			}
			err := p.g.call(rctx, "/v3/lease/keepalive", map[string]any{"ID": strconv.FormatInt(id, 10)}, &kr)
			cancel()
			switch {
			case err == nil && kr.Result != nil && kr.Result.TTL > 0:
				lastRenew = sent
				p.mu.Lock()
				p.validUntil = sent.Add(time.Duration(kr.Result.TTL) * time.Second)
				p.mu.Unlock()
			case err == nil || leaseGone(err): // answered: the lease is gone
				lost = true
				continue
			default:
				if time.Now().After(p.until()) {
					lost = true // the key may be gone: start over with a new lease
				}
				continue
			}
		}
		b := p.encode()
		p.mu.Lock()
		same := bytes.Equal(b, p.last)
		p.mu.Unlock()
		if same {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, renewEvery)
		var out json.RawMessage
		err := p.g.call(pctx, "/v3/kv/put", putReq{Key: []byte(p.key), Value: b, Lease: id}, &out)
		cancel()
		if err == nil {
			p.mu.Lock()
			p.last = b
			p.mu.Unlock()
		} else if leaseGone(err) {
			lost = true
		}
	}
}

func (p *Presence) until() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.validUntil
}

// Fenced reports whether the process's key may have expired: no renewal
// etcd confirmed within the last TTL.
func (p *Presence) Fenced() bool { return time.Now().After(p.until()) }

// Close stops the renewals and revokes the lease, so the key goes at
// once rather than TTL later. It is idempotent.
func (p *Presence) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.cancel()
	<-p.done
	p.mu.Lock()
	id := p.lease
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out json.RawMessage
	if err := p.g.call(ctx, "/v3/lease/revoke", map[string]any{"ID": strconv.FormatInt(id, 10)}, &out); err != nil && !leaseGone(err) {
		return fmt.Errorf("layoutsrc: revoke the lease of %s: %w", p.key, err)
	}
	return nil
}
