package localpool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/internal/freeport"
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

// readyTimeout bounds the wait for a role's listeners and msg=starting.
const readyTimeout = 90 * time.Second

// startAttempts bounds the retries of a first start whose ports were
// taken meanwhile by another program.
const startAttempts = 4

// role is one role of the pool: its fixed ports and its current run.
type role struct {
	name, kind string
	index      int            // of an indexer or a malicious publisher
	listeners  []string       // names of its listeners, as it logs them
	ports      map[string]int // listener name → port, fixed at the first start
	dir        string
	log        *roleLog
	cur        *run // nil while stopped
	started    bool // started at least once: its ports are in use by others' configs
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
}

// Start starts a pool as cfg says, in this order: the indexers, the
// assigner (with every indexer in its pool), the scatter front end over
// the indexers' find APIs, the honest publishers and the malicious ones
// (announcing to the assigner), and the piece sampler (tracking the
// providers the front end's GET /providers lists). It returns once every
// role has logged its listeners and msg=starting and the assigner knows
// every indexer, or the first error (after stopping what it started).
// Every listener is on 127.0.0.1, on a port chosen free at the role's
// first start and kept across its restarts. ctx bounds the start only.
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
	cfg.Logger.Info("roles that dial what others name get "+allowPrivate+": every role listens on 127.0.0.1, "+
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

func publisherListeners(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "publisher-" + strconv.Itoa(i)
	}
	return out
}

// addRole adds a role (not started); p.mu is held or p is not shared yet.
func (p *Pool) addRole(name, kind string, index int, listeners ...string) *role {
	r := &role{name: name, kind: kind, index: index, listeners: listeners, ports: map[string]int{},
		dir: filepath.Join(p.cfg.Dir, name)}
	r.log = &roleLog{name: name, cfg: &p.cfg, watch: map[*watcher]struct{}{}}
	p.roles[name] = r
	// Indexers go before the roles that list them.
	if kind == KindIndexer {
		at := len(p.indexers)
		p.order = slices.Insert(p.order, at, name)
		p.indexers = append(p.indexers, name)
	} else {
		p.order = append(p.order, name)
	}
	return r
}

// pickPorts chooses free ports for r's listeners; a publisher role's are
// consecutive (publisher i listens on the first port + i).
func pickPorts(r *role) error {
	if r.kind == KindPublisher {
		base, err := freeport.Pick(len(r.listeners))
		if err != nil {
			return err
		}
		for i, l := range r.listeners {
			r.ports[l] = base + i
		}
		return nil
	}
	for _, l := range r.listeners {
		port, err := freeport.Pick(1)
		if err != nil {
			return err
		}
		r.ports[l] = port
	}
	return nil
}

// loopbackPrefixes are the sources a pool on one host exempts from the
// announce rate limits of its roles.
const loopbackPrefixes = "127.0.0.0/8,::1/128"

// allowPrivate is the flag that lets a role dial loopback and private
// addresses. The indexers (publishers, the frozen indexers of handoffs),
// the assigner (unknown publishers' heads, which it verifies before it
// assigns them) and the piece sampler (publishers) dial addresses that
// announces, provider records and admin requests name, and by default
// refuse loopback ones; every role of the pool listens on 127.0.0.1, so
// they need it. Outside such a pool it stays off.
const allowPrivate = "-allow-private-addrs"

// dialingRoles are the kinds of role started with allowPrivate.
var dialingRoles = []string{KindIndexer, KindAssigner, KindPiece}

// args are the flags of r's program, from the pool as it is now.
func (p *Pool) args(r *role) []string {
	c := &p.cfg
	switch r.kind {
	case KindIndexer:
		budget := c.DiskBudget
		if r.index == 0 && c.FreezeBudget > 0 {
			budget = c.FreezeBudget
		}
		return []string{"-dir", r.dir, "-store", c.Store, "-find", r.addr("find"), "-ingest", r.addr("ingest"),
			"-admin", r.addr("admin"), "-metrics", "", "-p2p", "none", "-use-assigner", allowPrivate,
			"-disk-budget", strconv.FormatInt(budget, 10), "-freeze-at", "90", "-progress", "10s", "-log-level", "info",
			"-admin-token-file", filepath.Join(c.Dir, AdminTokenFile),
			"-handoff-from-file", filepath.Join(c.Dir, HandoffFromFile),
			// Every role of this pool announces from loopback: not limited.
			"-announce-rate-exempt", loopbackPrefixes}
	case KindAssigner:
		a := []string{"-listen", r.addr("announce"), "-state-listen", r.addr("state"), "-metrics", "",
			"-poll-interval", c.PollInterval.String(), "-request-timeout", "5s",
			"-replication", strconv.Itoa(c.Replication), allowPrivate, "-log-level", "info",
			"-admin-token-file", filepath.Join(c.Dir, AdminTokenFile),
			// The pool's publishers announce from loopback: not limited.
			"-announce-rate-exempt", loopbackPrefixes}
		for _, name := range p.indexers {
			ix := p.roles[name]
			a = append(a, "-indexer", fmt.Sprintf("id=%s,admin=%s,find=%s,ingest=%s", name, ix.url("admin"), ix.url("find"), ix.url("ingest")))
		}
		return a
	case KindScatter:
		var backends []string
		for _, name := range p.indexers {
			backends = append(backends, p.roles[name].url("find"))
		}
		return []string{"-listen", r.addr("find"), "-metrics", "", "-backends", strings.Join(backends, ","),
			"-timeout", "3s", "-log-level", "info"}
	case KindPublisher:
		a := []string{"-listen", r.addr("publisher-0"), "-interval", c.Interval.String(), "-entries", strconv.Itoa(c.Entries),
			"-initial-ads", strconv.Itoa(c.InitialAds), "-dir", r.dir, "-log-level", "info",
			"-announce", p.roles[RoleAssigner].url("announce")}
		if r.publishers > 0 { // honest: RolePublishers or added by AddPublishers
			a = append(a, "-publishers", strconv.Itoa(r.publishers), "-seed", strconv.FormatUint(r.seed, 10),
				"-max-ads", strconv.Itoa(c.MaxAds), "-piece-context-every", strconv.Itoa(max(0, c.PieceContextEvery)))
			if c.RemoveEvery != 0 {
				a = append(a, "-remove-every", strconv.Itoa(max(0, c.RemoveEvery)))
			}
			if c.UpdateEvery != 0 {
				a = append(a, "-update-every", strconv.Itoa(max(0, c.UpdateEvery)))
			}
		} else {
			a = append(a, "-publishers", "1", "-seed", strconv.FormatUint(c.Seed+1000+uint64(r.index), 10),
				"-max-ads", strconv.Itoa(c.MaliciousMaxAds), "-fault", string(c.Malicious[r.index]))
		}
		return a
	case KindPiece:
		return []string{"-listen", r.addr("api"), "-providers-url", p.roles[RoleScatter].url("find") + "/providers",
			"-poll-interval", "2s", "-store", "memory", "-dir", r.dir, "-request-rate", "0", allowPrivate, "-log-level", "info",
			"-announce-rate-exempt", loopbackPrefixes}
	}
	panic("pool: unknown kind " + r.kind)
}

// startRole starts r and waits until it is ready; opMu is held. A first
// start that fails because a port was taken meanwhile picks new ports and
// tries again.
func (p *Pool) startRole(ctx context.Context, r *role) error {
	p.mu.Lock()
	closed, running := p.closed, r.cur != nil
	p.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("start %s: %w", r.name, ErrClosed)
	case running:
		return fmt.Errorf("start %s: %w", r.name, ErrRunning)
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	if !p.cfg.Processes && inProcess(r.kind) {
		cur, err := p.startInProcess(ctx, r)
		if err != nil {
			return fmt.Errorf("start %s: %w", r.name, err)
		}
		p.mu.Lock()
		r.cur, r.started = cur, true
		p.mu.Unlock()
		p.cfg.Logger.Info("role started", "role", r.name, "ports", r.ports)
		return nil
	}
	for attempt := 1; ; attempt++ {
		if !r.started {
			p.mu.Lock()
			err := pickPorts(r)
			p.mu.Unlock()
			if err != nil {
				return err
			}
		}
		p.mu.Lock()
		args := p.args(r)
		var err error
		if r.kind == KindIndexer { // with its own find URL, now that its ports are known
			err = p.writeHandoffFromLocked()
		}
		p.mu.Unlock()
		if err != nil {
			return err
		}
		cur, err := startRun(&p.cfg, r.kind, args, r.log)
		if err != nil {
			return fmt.Errorf("start %s: %w", r.name, err)
		}
		err = p.waitReady(ctx, r, cur)
		if err == nil {
			p.mu.Lock()
			r.cur, r.started = cur, true
			p.mu.Unlock()
			p.cfg.Logger.Info("role started", "role", r.name, "ports", r.ports)
			return nil
		}
		cur.kill()
		if !r.started && attempt < startAttempts && addrInUse(cur) {
			p.cfg.Logger.Warn("role's port taken; picking others", "role", r.name)
			continue
		}
		if cur.err != nil {
			// The role returned an error instead of becoming ready; in
			// goroutine mode nothing else reports it.
			err = fmt.Errorf("%w (the role returned: %v)", err, cur.err)
		}
		return fmt.Errorf("start %s: %w; last log lines:\n%s", r.name, err, tail(cur.tap.Lines(), 15))
	}
}

// waitReady waits for every listener of r and msg=starting in cur's log.
func (p *Pool) waitReady(ctx context.Context, r *role, cur *run) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for _, l := range r.listeners {
		addr, err := cur.tap.Addr(ctx, l)
		if err != nil {
			return err
		}
		if addr != r.addr(l) {
			return fmt.Errorf("listener %s on %s, want %s", l, addr, r.addr(l))
		}
	}
	_, err := cur.tap.WaitMsg(ctx, "starting")
	return err
}

// addrInUse reports whether r failed because a port of it was taken: a
// process logs that, a goroutine returns it. r has returned (kill waits).
func addrInUse(r *run) bool {
	if errors.Is(r.err, syscall.EADDRINUSE) {
		return true
	}
	for _, l := range r.tap.Lines() {
		if strings.Contains(l, "address already in use") {
			return true
		}
	}
	return false
}

func tail(lines []string, n int) string {
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// Start starts a role that was stopped or killed, with the same data
// directory, flags and ports as before (the assigner and the scatter
// front end with the indexers of the pool now), and waits until it has
// logged its listeners and msg=starting.
func (p *Pool) Start(ctx context.Context, name string) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	r, err := p.lookup("start", name)
	if err != nil {
		return err
	}
	p.reap(r)
	return p.startRole(ctx, r)
}

// reap forgets r's run if it has exited on its own.
func (p *Pool) reap(r *role) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.cur != nil && r.cur.exited() {
		r.cur = nil
	}
}

// Stop stops a role gracefully (SIGTERM, or its context cancelled in
// goroutine mode) and waits for it: an indexer persists where its walks
// are, the publishers their positions. A process that does not stop
// within 20 s is killed. It returns the role's error, if it had one.
func (p *Pool) Stop(name string) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	return p.stop(name, false)
}

// Kill ends a role at once and waits for it. In processes mode it is
// SIGKILL: nothing is flushed or persisted, as in a crash. In goroutine
// mode a role can only be cancelled, and it shuts down as on [Pool.Stop]:
// crash tests need Config.Processes.
func (p *Pool) Kill(name string) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	return p.stop(name, true)
}

func (p *Pool) stop(name string, kill bool) error {
	op := "stop"
	if kill {
		op = "kill"
	}
	r, err := p.lookup(op, name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	cur := r.cur
	r.cur = nil
	p.mu.Unlock()
	if cur == nil {
		return fmt.Errorf("%s %s: %w", op, name, ErrStopped)
	}
	if kill {
		cur.kill()
		p.cfg.Logger.Info("role killed", "role", name)
		return nil
	}
	err = cur.stop()
	p.cfg.Logger.Info("role stopped", "role", name, "err", err)
	if err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	return nil
}

// Restart stops a running role gracefully (see [Pool.Stop]; a role that
// is not running is just started) and starts it again as [Pool.Start]
// does.
func (p *Pool) Restart(ctx context.Context, name string) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if _, err := p.lookup("restart", name); err != nil {
		return err
	}
	if err := p.stop(name, false); err != nil && !errors.Is(err, ErrStopped) {
		return err
	}
	return p.startRole(ctx, p.role(name))
}

// AddIndexer adds an indexer to the pool, as the seed says an operator
// does: it starts a new indexer node (role "indexer-<n>"), then restarts
// the assigner with the new indexer in its configuration, and the scatter
// front end with it among its backends (each only if it was running; a
// stopped one gets the new configuration at its next start). Finds through
// the front end fail while it restarts (well under a second). It returns
// the new role's name.
func (p *Pool) AddIndexer(ctx context.Context) (string, error) {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", fmt.Errorf("add indexer: %w", ErrClosed)
	}
	name := IndexerName(len(p.indexers))
	r := p.addRole(name, KindIndexer, len(p.indexers), "find", "ingest", "admin")
	p.mu.Unlock()
	if err := p.startRole(ctx, r); err != nil {
		return name, fmt.Errorf("add indexer: %w", err)
	}
	for _, dep := range []string{RoleAssigner, RoleScatter} {
		d := p.role(dep)
		p.reap(d)
		p.mu.Lock()
		running := d.cur != nil
		p.mu.Unlock()
		if !running {
			continue
		}
		if err := p.stop(dep, false); err != nil {
			return name, fmt.Errorf("add indexer: %w", err)
		}
		if err := p.startRole(ctx, d); err != nil {
			return name, fmt.Errorf("add indexer: %w", err)
		}
	}
	return name, nil
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
	p.cfg.Logger.Info("pool stopped")
	return errors.Join(errs...)
}

// LogLines returns the lines the current (or last) run of a role has
// logged: its first lines and its most recent ones. It is what a test
// prints when something failed.
func (p *Pool) LogLines(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.roles[name]
	if r == nil || r.cur == nil {
		return nil
	}
	return r.cur.tap.Lines()
}

// WatchLog returns a channel that receives the key=value fields of the
// next line of the role's log, in this run or a later one, for which match
// holds (logtap.Fields parses the line); it receives at most one value.
// Lines written before the call are not considered. For example, to act
// in the middle of a handoff:
//
//	ch, _ := p.WatchLog(pool.RoleAssigner, func(f map[string]string) bool {
//		return f["msg"] == "decision" && f["kind"] == "handoff"
//	})
//	// ... freeze an indexer ...
//	<-ch
//	p.Kill(pool.RoleAssigner)
func (p *Pool) WatchLog(name string, match func(fields map[string]string) bool) (<-chan map[string]string, error) {
	r := p.role(name)
	if r == nil {
		return nil, fmt.Errorf("watch log %q: %w", name, ErrUnknownRole)
	}
	w := &watcher{match: match, found: make(chan map[string]string, 1)}
	r.log.mu.Lock()
	r.log.watch[w] = struct{}{}
	r.log.mu.Unlock()
	return w.found, nil
}

// URLs are the base URLs of the pool's APIs (no trailing slash).
type URLs struct {
	// Find is the scatter front end's IPNI find API: GET
	// /multihash/{mh}, /cid/{cid}, /providers.
	Find string
	// Piece is the piece sampler's API: GET /sample/{provider}/{piece},
	// /ingestion-status/{provider}.
	Piece string
	// AssignerAnnounce takes PUT /announce; AssignerState serves GET
	// /assignments and /indexers.
	AssignerAnnounce, AssignerState string
	// Indexers are every indexer's APIs, in pool order.
	Indexers []IndexerURLs
	// Publishers are the honest publishers' ipnisync (and GET /truth)
	// base URLs, publisher i at index i: those of role "publishers", then
	// those added by [Pool.AddPublishers]; Malicious those of the faulty
	// ones, in Config.Malicious order.
	Publishers, Malicious []string
}

// IndexerURLs are one indexer's APIs.
type IndexerURLs struct {
	Name                string
	Find, Ingest, Admin string
}

// URLs returns the pool's URLs. Ports are fixed at each role's first
// start, so the URLs stay valid across restarts.
func (p *Pool) URLs() URLs {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, s, pc := p.roles[RoleAssigner], p.roles[RoleScatter], p.roles[RolePiece]
	u := URLs{Find: s.url("find"), Piece: pc.url("api"),
		AssignerAnnounce: a.url("announce"), AssignerState: a.url("state")}
	for _, name := range p.indexers {
		r := p.roles[name]
		u.Indexers = append(u.Indexers, IndexerURLs{Name: name, Find: r.url("find"), Ingest: r.url("ingest"), Admin: r.url("admin")})
	}
	for _, name := range p.honest() {
		r := p.roles[name]
		for _, l := range r.listeners {
			u.Publishers = append(u.Publishers, r.url(l))
		}
	}
	for i := range p.cfg.Malicious {
		u.Malicious = append(u.Malicious, p.roles[MaliciousName(i)].url("publisher-0"))
	}
	return u
}

// AdminToken returns the bearer token the pool's indexers require on
// their admin API (also in Config.Dir/[AdminTokenFile]), for
// admin.WithClientToken.
func (p *Pool) AdminToken() string { return p.token }

// Dir returns the data directory of a role: Config.Dir/<name>.
func (p *Pool) Dir(name string) string { return filepath.Join(p.cfg.Dir, name) }

// Config returns the pool's configuration, with the defaults filled in.
func (p *Pool) Config() Config { return p.cfg }

// decodeJSON decodes resp's body into v.
func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
