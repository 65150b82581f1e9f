package localpool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/indexkit/indexkit/assigner"
)

// Names of the roles that are not numbered.
const (
	RoleAssigner   = "assigner"
	RoleScatter    = "scatter"
	RolePublishers = "publishers"
	RolePiece      = "piece"
)

// IndexerName is the role name of indexer i: "indexer-<i>".
func IndexerName(i int) string { return "indexer-" + strconv.Itoa(i) }

// MaliciousName is the role name of the faulty publisher i (Config.Malicious[i]):
// "malicious-<i>".
func MaliciousName(i int) string { return "malicious-" + strconv.Itoa(i) }

// role is one role of the pool: its fixed ports and its current run.
type role struct {
	name, kind string
	index      int            // of an indexer or a malicious publisher
	listeners  []string       // names of its listeners, as it logs them
	ports      map[string]int // listener name → port, fixed at the first start (none before)
	dir        string
	log        *roleLog
	cur        *run // nil while stopped
	// Of an honest publisher role (RolePublishers, or one added by
	// AddPublishers): its -publishers and -seed.
	publishers int
	seed       uint64
}

func (r *role) addr(listener string) string {
	return "127.0.0.1:" + strconv.Itoa(r.ports[listener])
}

func (r *role) url(listener string) string { return "http://" + r.addr(listener) }

// Pool is a running local IPNI pool. Its methods are safe for concurrent
// use; operations on roles (Start, Stop, Kill, Restart, AddIndexer) run
// one at a time.
type Pool struct {
	cfg  Config
	opMu sync.Mutex // serializes role operations and Close

	mu       sync.Mutex // guards what follows
	roles    map[string]*role
	order    []string // start order
	indexers []string
	closed   bool

	heads headLog // publisher heads seen, for the lag
	hc    *http.Client
	token string // the indexers' admin token (AdminTokenFile)

	queries    []string // query node roles (Config.Sharded), in order of creation
	shardToken string   // the query nodes' token (ShardTokenFile)
	ctl        *control // where the layout lives (Config.Sharded)
}

// Start starts a pool as cfg says, in this order: the indexers, the
// assigner (with every indexer in its pool), the scatter front end over
// the indexers' find APIs, the honest publishers and the malicious ones
// (announcing to the assigner), and the piece sampler (tracking the
// providers the front end's GET /providers lists). It returns once every
// role is ready (its New has returned) and the assigner knows every
// indexer, or the first error (after stopping what it started). Every
// listener is on 127.0.0.1, on a port chosen free at the role's first
// start and kept across its restarts. ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*Pool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Processes && cfg.Executable == "" {
		if cfg.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("pool: processes mode: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("pool: Dir: %w", err)
	}
	// Keep a connection per query in flight (Check runs checkConcurrency
	// at once), rather than closing all but two after each.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * checkConcurrency
	p := &Pool{cfg: cfg, roles: map[string]*role{}, hc: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
	if p.token, err = newAdminToken(cfg.Dir); err != nil {
		return nil, err
	}
	for i := range cfg.Indexers {
		p.addRole(IndexerName(i), KindIndexer, i, "find", "ingest", "admin")
	}
	p.addRole(RoleAssigner, KindAssigner, 0, "announce", "state")
	p.addRole(RoleScatter, KindScatter, 0, "find")
	if cfg.Publishers > 0 {
		r := p.addRole(RolePublishers, KindPublisher, 0, publisherListeners(cfg.Publishers)...)
		r.publishers, r.seed = cfg.Publishers, cfg.Seed
	}
	for i := range cfg.Malicious {
		p.addRole(MaliciousName(i), KindPublisher, i, "publisher-0")
	}
	p.addRole(RolePiece, KindPiece, 0, "api")
	if cfg.Sharded != nil {
		if err := p.initSharded(ctx); err != nil {
			p.ctl.stop()
			return nil, err
		}
	}
	cfg.Logger.Info("roles that dial what others name get AllowPrivateAddrs: every role listens on 127.0.0.1, "+
		"which their default dial policy refuses", "roles", dialingRoles)

	p.opMu.Lock()
	defer p.opMu.Unlock()
	for _, name := range p.order {
		if err := p.startRole(ctx, p.roles[name]); err != nil {
			p.closeLocked()
			return nil, err
		}
		if name == RoleAssigner {
			if err := p.waitAssigner(ctx, true); err != nil {
				p.closeLocked()
				return nil, err
			}
		}
	}
	cfg.Logger.Info("pool started", "dir", cfg.Dir, "indexers", cfg.Indexers, "publishers", cfg.Publishers,
		"malicious", len(cfg.Malicious), "store", cfg.Store, "processes", cfg.Processes)
	return p, nil
}

// waitAssigner waits until the assigner's state API answers and, with
// all, until it knows every indexer of its pool (its startup rebuild).
func (p *Pool) waitAssigner(ctx context.Context, all bool) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		ixs, err := p.assignerIndexers(ctx)
		if err == nil {
			ready := true
			for _, ix := range ixs {
				ready = ready && (!all || ix.Known && ix.Online)
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the assigner to know its indexers: %w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// assignerIndexers is the assigner's GET /indexers.
func (p *Pool) assignerIndexers(ctx context.Context) ([]assigner.IndexerSnapshot, error) {
	var ixs []assigner.IndexerSnapshot
	err := p.getJSON(ctx, p.role(RoleAssigner).url("state")+"/indexers", &ixs)
	return ixs, err
}

// getJSON GETs url into v; a status other than 200 is an error (204:
// v is left as it is).
func (p *Pool) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return json.NewDecoder(resp.Body).Decode(v)
	case http.StatusNoContent:
		return nil
	default:
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
}

// role returns the role named name, or nil.
func (p *Pool) role(name string) *role {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.roles[name]
}

// lookup returns the role named name for an operation; opMu is held.
func (p *Pool) lookup(op, name string) (*role, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("%s %s: %w", op, name, ErrClosed)
	}
	r, ok := p.roles[name]
	if !ok {
		return nil, fmt.Errorf("%s %q: %w", op, name, ErrUnknownRole)
	}
	return r, nil
}

// Roles returns the names of the roles, in start order.
func (p *Pool) Roles() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

// Indexers returns the names of the indexer roles, in the assigner's
// pool order.
func (p *Pool) Indexers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.indexers)
}

// Running reports whether the role runs: started and not stopped, killed,
// or exited on its own.
func (p *Pool) Running(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.roles[name]
	return r != nil && r.cur != nil && !r.cur.exited()
}

// Close stops every running role gracefully, in the reverse order of
// their start, and waits for each. It returns the roles' errors, joined.
// Close is idempotent; the pool's data directory is left in place.
func (p *Pool) Close() error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	return p.closeLocked()
}

func (p *Pool) closeLocked() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	order := slices.Clone(p.order)
	p.mu.Unlock()
	var errs []error
	for _, name := range slices.Backward(order) {
		r := p.role(name)
		p.mu.Lock()
		cur := r.cur
		r.cur = nil
		p.mu.Unlock()
		if cur == nil {
			continue
		}
		if err := cur.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	p.hc.CloseIdleConnections()
	p.ctl.stop()
	p.cfg.Logger.Info("pool stopped")
	return errors.Join(errs...)
}

// decodeJSON decodes resp's body into v.
func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
