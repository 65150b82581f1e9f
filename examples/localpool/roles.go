package localpool

// Starting, stopping and adding roles.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

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

// startRole starts r and waits until it is ready: in a goroutine, or in
// a child process with Config.Processes, from the same spec. opMu is
// held. Its listeners are bound on the ports it had (any free port at its
// first start).
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
	s, err := p.spec(r)
	if err != nil {
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	var cur *run
	if p.cfg.Processes {
		cur, err = startProcess(ctx, p.cfg.Executable, s, r.log)
	} else {
		cur, err = startGoroutine(ctx, s, r.log)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	p.mu.Lock()
	for i, name := range r.listeners {
		r.ports[name] = cur.ports[i]
	}
	if r.kind == KindIndexer { // with its own find URL, now that its ports are known
		err = p.writeHandoffFromLocked()
	}
	if err == nil {
		r.cur = cur
	}
	p.mu.Unlock()
	if err != nil {
		cur.kill()
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	p.cfg.Logger.Info("role started", "role", r.name, "ports", r.ports)
	return nil
}

// Start starts a role that was stopped or killed, with the same data
// directory, configuration and ports as before (the assigner and the
// scatter front end with the indexers of the pool now), and waits until
// it is ready.
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
