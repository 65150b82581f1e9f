package etcdjson

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Error is an error etcd answered, with its gRPC code.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return "etcd: " + e.Message }

// gRPC codes the client acts on.
const (
	codeNotFound    = 5
	codeUnavailable = 14
)

var (
	// ErrLeaseNotFound: the lease expired or was revoked.
	ErrLeaseNotFound = errors.New("etcd: requested lease not found")
	// ErrCompacted: a watch asked for a revision etcd has compacted.
	ErrCompacted = errors.New("etcd: required revision has been compacted")
)

// Client talks to an etcd cluster through its JSON gateway. It sticks to
// one endpoint and moves to the next when that one fails to answer or
// answers "unavailable" (no leader, say). It is safe for concurrent use.
type Client struct {
	eps []string
	hc  *http.Client
	cur atomic.Int32
}

// New returns a client of the cluster whose members' client URLs are
// endpoints (http://HOST:PORT). Requests time out after timeout (0: 5 s);
// watches, which last, only end with their context.
func New(endpoints []string, timeout time.Duration) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcdjson: no endpoints")
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	eps := make([]string, len(endpoints))
	for i, e := range endpoints {
		if !strings.Contains(e, "://") {
			e = "http://" + e
		}
		eps[i] = strings.TrimSuffix(e, "/")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &Client{eps: eps, hc: &http.Client{Transport: tr, Timeout: timeout}}, nil
}

// Endpoints returns the client's endpoints.
func (c *Client) Endpoints() []string { return c.eps }

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// i64 is an int64 that etcd's JSON writes as a string.
type i64 int64

func (v i64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(v), 10) + `"`), nil
}

func (v *i64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*v = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*v = i64(n)
	return err
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// prefixEnd is the range end that makes key a prefix.
func prefixEnd(key string) string {
	b := []byte(key)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

type header struct {
	Revision i64 `json:"revision"`
}

// KV is a key and its value.
type KV struct {
	Key, Value                           []byte
	CreateRevision, ModRevision, Version int64
	Lease                                int64
}

type kvJSON struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision i64    `json:"create_revision"`
	ModRevision    i64    `json:"mod_revision"`
	Version        i64    `json:"version"`
	Lease          i64    `json:"lease"`
}

func (k kvJSON) kv() KV {
	return KV{Key: k.Key, Value: k.Value, CreateRevision: int64(k.CreateRevision), ModRevision: int64(k.ModRevision), Version: int64(k.Version), Lease: int64(k.Lease)}
}

type errJSON struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// call posts req to path and decodes the answer into resp, failing over
// across endpoints on a failure to connect or an "unavailable". When a
// member answered "unavailable" (an election under way: "leader changed",
// "no leader"), it goes over the endpoints again, after 50 ms, then twice
// as long each time up to 400 ms, for as long as a request may take (the
// client's timeout) or ctx allows: a cluster that loses its leader elects
// another within about a second, and its clients should not fail
// meanwhile. A cluster none of whose members answers fails at once.
func (c *Client) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	start := time.Now()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 400*time.Millisecond) {
		electing, err := c.pass(ctx, path, body, resp)
		if err == nil || !electing || ctx.Err() != nil || time.Since(start)+wait > c.hc.Timeout {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// pass is one try of call over every endpoint. electing reports that a
// member answered "unavailable".
func (c *Client) pass(ctx context.Context, path string, body []byte, resp any) (electing bool, err error) {
	var errs []error
	start := int(c.cur.Load())
	for i := range c.eps {
		idx := (start + i) % len(c.eps)
		err := c.callOne(ctx, c.eps[idx], path, body, resp)
		if err == nil {
			c.cur.Store(int32(idx))
			return false, nil
		}
		var ee *Error
		if errors.As(err, &ee) {
			if ee.Code != codeUnavailable {
				return false, err // etcd answered: another member would say the same
			}
			electing = true
		}
		if ctx.Err() != nil {
			return false, err
		}
		errs = append(errs, err)
	}
	c.cur.Store(int32((start + 1) % len(c.eps)))
	return electing, fmt.Errorf("etcdjson: %s: no endpoint answered: %w", path, errors.Join(errs...))
}

func (c *Client) callOne(ctx context.Context, ep, path string, body []byte, resp any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 64<<20))
	if err != nil {
		return err
	}
	if hresp.StatusCode != http.StatusOK {
		var e errJSON
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			if e.Code == codeNotFound && strings.Contains(e.Message, "lease not found") {
				return ErrLeaseNotFound
			}
			return &Error{Code: e.Code, Message: e.Message}
		}
		return &Error{Code: codeUnavailable, Message: fmt.Sprintf("%s%s: %s", ep, path, hresp.Status)}
	}
	if err := json.Unmarshal(b, resp); err != nil {
		return fmt.Errorf("etcdjson: %s%s: decode: %w", ep, path, err)
	}
	return nil
}

type rangeReq struct {
	Key        string `json:"key"`
	RangeEnd   string `json:"range_end,omitempty"`
	SortOrder  string `json:"sort_order,omitempty"`
	SortTarget string `json:"sort_target,omitempty"`
	Limit      i64    `json:"limit,omitempty"`
}

type rangeResp struct {
	Header header   `json:"header"`
	Kvs    []kvJSON `json:"kvs"`
}

// Get returns key's value (nil when absent) and the store's revision.
func (c *Client) Get(ctx context.Context, key string) (*KV, int64, error) {
	var r rangeResp
	if err := c.call(ctx, "/v3/kv/range", rangeReq{Key: b64(key)}, &r); err != nil {
		return nil, 0, err
	}
	if len(r.Kvs) == 0 {
		return nil, int64(r.Header.Revision), nil
	}
	kv := r.Kvs[0].kv()
	return &kv, int64(r.Header.Revision), nil
}

// GetPrefix returns the keys under prefix, by key, or by create revision
// when byCreate (the oldest first); limit > 0 keeps the first limit.
func (c *Client) GetPrefix(ctx context.Context, prefix string, byCreate bool, limit int) ([]KV, int64, error) {
	req := rangeReq{Key: b64(prefix), RangeEnd: b64(prefixEnd(prefix)), Limit: i64(limit)}
	if byCreate {
		req.SortTarget, req.SortOrder = "CREATE", "ASCEND"
	}
	var r rangeResp
	if err := c.call(ctx, "/v3/kv/range", req, &r); err != nil {
		return nil, 0, err
	}
	out := make([]KV, len(r.Kvs))
	for i, k := range r.Kvs {
		out[i] = k.kv()
	}
	return out, int64(r.Header.Revision), nil
}

type putReq struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Lease i64    `json:"lease,omitempty"`
}

// Put writes key, bound to lease when not 0, and returns the revision.
func (c *Client) Put(ctx context.Context, key, value string, lease int64) (int64, error) {
	var r struct {
		Header header `json:"header"`
	}
	if err := c.call(ctx, "/v3/kv/put", putReq{Key: b64(key), Value: b64(value), Lease: i64(lease)}, &r); err != nil {
		return 0, err
	}
	return int64(r.Header.Revision), nil
}

// Cmp is a compare of a transaction: the key's ModRevision (or
// CreateRevision, when Create) equals Rev; 0 means the key is absent.
type Cmp struct {
	Key    string
	Create bool
	Rev    int64
}

// Op is an operation of a transaction: a put when Put, else a get.
type Op struct {
	Key, Value string
	Lease      int64
	Put        bool
}

// TxnResult is a transaction's outcome: whether the compares held, the
// revision after it, and the values each get found, in order.
type TxnResult struct {
	Succeeded bool
	Revision  int64
	Gets      [][]KV
}

// Txn runs ops if every compare holds, else els.
func (c *Client) Txn(ctx context.Context, cmps []Cmp, ops, els []Op) (TxnResult, error) {
	type cmpJSON struct {
		Target         string `json:"target"`
		Key            string `json:"key"`
		Result         string `json:"result"`
		ModRevision    *i64   `json:"mod_revision,omitempty"`
		CreateRevision *i64   `json:"create_revision,omitempty"`
	}
	type opJSON struct {
		Put   *putReq   `json:"request_put,omitempty"`
		Range *rangeReq `json:"request_range,omitempty"`
	}
	req := struct {
		Compare []cmpJSON `json:"compare"`
		Success []opJSON  `json:"success"`
		Failure []opJSON  `json:"failure"`
	}{}
	for _, cp := range cmps {
		rev := i64(cp.Rev)
		j := cmpJSON{Key: b64(cp.Key), Result: "EQUAL"}
		if cp.Create {
			j.Target, j.CreateRevision = "CREATE", &rev
		} else {
			j.Target, j.ModRevision = "MOD", &rev
		}
		req.Compare = append(req.Compare, j)
	}
	conv := func(os []Op) []opJSON {
		out := make([]opJSON, 0, len(os))
		for _, o := range os {
			if o.Put {
				out = append(out, opJSON{Put: &putReq{Key: b64(o.Key), Value: b64(o.Value), Lease: i64(o.Lease)}})
			} else {
				out = append(out, opJSON{Range: &rangeReq{Key: b64(o.Key)}})
			}
		}
		return out
	}
	req.Success, req.Failure = conv(ops), conv(els)
	var r struct {
		Header    header `json:"header"`
		Succeeded bool   `json:"succeeded"`
		Responses []struct {
			Range *rangeResp `json:"response_range"`
		} `json:"responses"`
	}
	if err := c.call(ctx, "/v3/kv/txn", req, &r); err != nil {
		return TxnResult{}, err
	}
	res := TxnResult{Succeeded: r.Succeeded, Revision: int64(r.Header.Revision)}
	for _, resp := range r.Responses {
		if resp.Range == nil {
			continue
		}
		kvs := make([]KV, len(resp.Range.Kvs))
		for i, k := range resp.Range.Kvs {
			kvs[i] = k.kv()
		}
		res.Gets = append(res.Gets, kvs)
	}
	return res, nil
}

// Grant creates a lease of ttl seconds and returns its ID and the TTL
// etcd granted.
func (c *Client) Grant(ctx context.Context, ttl int64) (id, granted int64, err error) {
	var r struct {
		ID  i64 `json:"ID"`
		TTL i64 `json:"TTL"`
	}
	if err := c.call(ctx, "/v3/lease/grant", struct {
		TTL i64 `json:"TTL"`
	}{i64(ttl)}, &r); err != nil {
		return 0, 0, err
	}
	return int64(r.ID), int64(r.TTL), nil
}

// KeepAliveOnce renews lease id and returns its new TTL; it returns
// ErrLeaseNotFound when the lease is gone.
func (c *Client) KeepAliveOnce(ctx context.Context, id int64) (int64, error) {
	var r struct {
		Result struct {
			TTL i64 `json:"TTL"`
		} `json:"result"`
		Error *errJSON `json:"error"`
	}
	if err := c.call(ctx, "/v3/lease/keepalive", struct {
		ID i64 `json:"ID"`
	}{i64(id)}, &r); err != nil {
		return 0, err
	}
	if r.Error != nil {
		return 0, &Error{Code: r.Error.Code, Message: r.Error.Message}
	}
	if r.Result.TTL <= 0 {
		return 0, ErrLeaseNotFound
	}
	return int64(r.Result.TTL), nil
}

// Revoke ends lease id and deletes its keys.
func (c *Client) Revoke(ctx context.Context, id int64) error {
	var r struct{}
	return c.call(ctx, "/v3/lease/revoke", struct {
		ID i64 `json:"ID"`
	}{i64(id)}, &r)
}

// Event is a change a watch reports.
type Event struct {
	Delete bool
	KV     KV
}

// Watch follows key (every key under it when prefix) from revision from
// (0: from now) on the endpoint in use, calling fn with each batch of
// events, until ctx ends (it returns nil), the stream breaks, or fn
// returns an error (both returned). A compacted from gives ErrCompacted.
func (c *Client) Watch(ctx context.Context, key string, prefix bool, from int64, fn func([]Event) error) error {
	type create struct {
		Key           string `json:"key"`
		RangeEnd      string `json:"range_end,omitempty"`
		StartRevision i64    `json:"start_revision,omitempty"`
	}
	cr := create{Key: b64(key), StartRevision: i64(from)}
	if prefix {
		cr.RangeEnd = b64(prefixEnd(key))
	}
	body, _ := json.Marshal(struct {
		Create create `json:"create_request"`
	}{cr})
	ep := c.eps[int(c.cur.Load())%len(c.eps)]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Transport: c.hc.Transport} // no timeout: the stream lasts
	resp, err := hc.Do(req)
	if err != nil {
		c.cur.Store(int32((int(c.cur.Load()) + 1) % len(c.eps)))
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("etcdjson: watch on %s: %w", ep, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.cur.Store(int32((int(c.cur.Load()) + 1) % len(c.eps)))
		return fmt.Errorf("etcdjson: watch on %s: %s", ep, resp.Status)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Result struct {
				Canceled        bool   `json:"canceled"`
				CancelReason    string `json:"cancel_reason"`
				CompactRevision i64    `json:"compact_revision"`
				Events          []struct {
					Type string `json:"type"`
					KV   kvJSON `json:"kv"`
				} `json:"events"`
			} `json:"result"`
			Error *errJSON `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("etcdjson: watch on %s: %w", ep, err)
		}
		if m.Error != nil {
			return &Error{Code: m.Error.Code, Message: m.Error.Message}
		}
		if m.Result.CompactRevision > 0 {
			return fmt.Errorf("%w (at %d)", ErrCompacted, m.Result.CompactRevision)
		}
		if m.Result.Canceled {
			return fmt.Errorf("etcdjson: watch canceled: %s", m.Result.CancelReason)
		}
		if len(m.Result.Events) == 0 {
			continue
		}
		evs := make([]Event, len(m.Result.Events))
		for i, e := range m.Result.Events {
			evs[i] = Event{Delete: e.Type == "DELETE", KV: e.KV.kv()}
		}
		if err := fn(evs); err != nil {
			return err
		}
	}
}
