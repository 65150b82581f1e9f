package localpool

// Starting, stopping and adding roles; processes mode's ports and flags.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/indexkit/indexkit/internal/freeport"
)

// readyTimeout bounds the wait for a role's listeners and msg=starting.
const readyTimeout = 90 * time.Second

// startAttempts bounds the retries of a first start whose ports were
// taken meanwhile by another program.
const startAttempts = 4

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
		var sharded []string
		if c.Sharded != nil {
			sharded = p.shardedIndexerArgs(r)
		}
		return append(sharded, "-dir", r.dir, "-store", c.Store, "-find", r.addr("find"), "-ingest", r.addr("ingest"),
			"-admin", r.addr("admin"), "-metrics", "", "-p2p", "none", "-use-assigner", allowPrivate,
			"-disk-budget", strconv.FormatInt(budget, 10), "-freeze-at", "90", "-progress", "10s", "-log-level", "info", "-sampling",
			"-admin-token-file", filepath.Join(c.Dir, AdminTokenFile),
			"-handoff-from-file", filepath.Join(c.Dir, HandoffFromFile),
			// Every role of this pool announces from loopback: not limited.
			"-announce-rate-exempt", loopbackPrefixes)
	case KindQuery:
		return p.queryArgs(r)
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
		src := []string{"-backends", strings.Join(backends, ",")}
		if c.Sharded != nil {
			src = []string{"-layout", p.layoutPath()}
		}
		return append(src, "-listen", r.addr("find"), "-metrics", "",
			"-assigner-state", p.roles[RoleAssigner].url("state"), "-timeout", "3s", "-log-level", "info")
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
	if err = cur.stop(); err != nil {
		p.cfg.Logger.Warn("role stopped", "role", name, "err", err)
		return fmt.Errorf("stop %s: %w", name, err)
	}
	p.cfg.Logger.Info("role stopped", "role", name)
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
	if p.cfg.Sharded != nil {
		// A new ingest node is a new writer of the layout: the next
		// epoch names it, so that the query nodes wait for it too.
		if err := p.addWriter(ctx, name); err != nil {
			return name, fmt.Errorf("add indexer: %w", err)
		}
	}
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
