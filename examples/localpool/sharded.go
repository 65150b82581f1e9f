package localpool

// The keyspace-sharded layers: query nodes, the layout file, and the
// coordinator that adds and removes query nodes.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/indexkit/indexkit/scatter/find/health"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/internal/freeport"
	"github.com/indexkit/indexkit/scatter/keyspace"
)

// Sharded configures the keyspace-sharded layers of a pool
// (Config.Sharded): the indexers become ingest nodes that write through
// durable outboxes to query nodes, each holding the multihashes of its
// ranges on a ring with Replication owners per key, and the front end
// routes each lookup to the owners of its key.
type Sharded struct {
	// QueryNodes is the number of query nodes at start (default 4),
	// roles "query-0", "query-1", ...
	QueryNodes int
	// Replication is the number of owners of each multihash (default 2).
	Replication int
	// Store is the query nodes' index backend: "pebble" (default) or
	// "memory".
	Store string
	// BatchBytes is the size of the batches an ingest node sends to a
	// query node (0: the writer package's default, 1 MiB).
	BatchBytes int
	// Etcd is where the layout lives: "" the layout file (LayoutFile,
	// re-read by the roles on SIGHUP); [EtcdStart] an etcd member the
	// pool starts; else the HOST:PORT[,HOST:PORT...] of an etcd cluster.
	// On etcd every role watches the layout and keeps its status under a
	// lease, and the pool's coordinator is elected (package
	// scatter/keyspace/etcdlayout), under a prefix of the pool's own.
	Etcd string `json:",omitempty"`
}

// Files of a sharded pool in Config.Dir.
const (
	// LayoutFile is the layout every sharded role loads at start and
	// again on SIGHUP (the one source of the epoch); the pool's
	// coordinator rewrites it at each step of a membership change.
	LayoutFile = "layout.json"
	// ShardTokenFile holds the query nodes' bearer token (mode 0600),
	// written fresh at each [Start].
	ShardTokenFile = "shard-token"
)

// queryCommit is the query nodes' commit interval in a pool: short, so
// that a change's barriers (which wait for durable batches) pass quickly.
const queryCommit = 300 * time.Millisecond

// KindQuery is the kind of a query node role.
const KindQuery = "query"

// QueryName is the role name of query node i: "query-<i>".
func QueryName(i int) string { return "query-" + strconv.Itoa(i) }

func (s *Sharded) withDefaults() error {
	if s.QueryNodes == 0 {
		s.QueryNodes = 4
	}
	if s.Replication == 0 {
		s.Replication = 2
	}
	if s.Store == "" {
		s.Store = "pebble"
	}
	switch {
	case s.QueryNodes < 0 || s.Replication < 0 || s.BatchBytes < 0:
		return errors.New("Sharded: QueryNodes, Replication and BatchBytes must not be negative")
	case s.Replication > s.QueryNodes:
		return fmt.Errorf("Sharded: Replication %d exceeds QueryNodes %d", s.Replication, s.QueryNodes)
	case s.Store != "pebble" && s.Store != "memory":
		return fmt.Errorf("Sharded: Store %q: want pebble or memory", s.Store)
	}
	return nil
}

// addQueryRole adds query node role i with its port chosen now: the
// layout names its URL before it starts. p.mu is held or p is not shared.
func (p *Pool) addQueryRole(i int) (*role, error) {
	name := QueryName(i)
	r := &role{name: name, kind: KindQuery, index: i, listeners: []string{"query"}, ports: map[string]int{},
		dir: filepath.Join(p.cfg.Dir, name)}
	r.log = &roleLog{name: name, cfg: &p.cfg, watch: map[*watcher]struct{}{}}
	port, err := freeport.Pick(1)
	if err != nil {
		return nil, err
	}
	r.ports["query"] = port
	p.roles[name] = r
	p.queries = append(p.queries, name)
	return r, nil
}

// initSharded adds the query roles (first in the start order), sets up
// where the layout lives and publishes the first one, and writes the
// token; Start calls it before starting anything.
func (p *Pool) initSharded(ctx context.Context) error {
	sc := p.cfg.Sharded
	tok, err := newToken(filepath.Join(p.cfg.Dir, ShardTokenFile))
	if err != nil {
		return err
	}
	p.shardToken = tok
	l := keyspace.Layout{Epoch: 1, Replication: sc.Replication, Phase: keyspace.PhaseStable}
	for i := range sc.Config().QueryNodes {
		r, err := p.addQueryRole(i)
		if err != nil {
			return err
		}
		l.Nodes = append(l.Nodes, keyspace.Node{Name: r.name, URL: r.url("query")})
		l.Current = append(l.Current, r.name)
	}
	p.order = append(slices.Clone(p.queries), p.order...)
	for i := range p.cfg.Indexers {
		l.Writers = append(l.Writers, IndexerName(i))
	}
	if p.ctl, err = p.openControl(ctx); err != nil {
		return err
	}
	return p.ctl.publishFirst(l)
}

// Config returns s with the defaults filled in.
func (s *Sharded) Config() Sharded {
	c := *s
	_ = c.withDefaults()
	return c
}

func (p *Pool) layoutPath() string { return filepath.Join(p.cfg.Dir, LayoutFile) }

// Layout returns the layout in force (the file's, or etcd's).
func (p *Pool) Layout() (keyspace.Layout, error) {
	if p.cfg.Sharded == nil || p.ctl == nil {
		return keyspace.Layout{}, fmt.Errorf("layout: %w: the pool is not sharded", ErrConfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, _, err := p.ctl.store.Load(ctx)
	return l, err
}

// QueryNodes returns the names of the query node roles, in order of
// creation (those removed included).
func (p *Pool) QueryNodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.queries)
}

// ShardToken returns the query nodes' bearer token.
func (p *Pool) ShardToken() string { return p.shardToken }

// reloadLayout has every running sharded role load the layout file: a
// SIGHUP to each process, or a direct call in goroutine mode. On etcd the
// roles watch the layout themselves.
func (p *Pool) reloadLayout(ctx context.Context, _ keyspace.Layout) error {
	if p.OnEtcd() {
		return nil
	}
	p.mu.Lock()
	var runs []*run
	for _, name := range p.order {
		r := p.roles[name]
		if r.cur == nil || r.cur.exited() {
			continue
		}
		switch r.kind {
		case KindQuery, KindIndexer, KindScatter:
			runs = append(runs, r.cur)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, cur := range runs {
		if cur.cmd != nil {
			if err := cur.cmd.Process.Signal(syscall.SIGHUP); err != nil && !cur.exited() {
				errs = append(errs, err)
			}
			continue
		}
		if rl, ok := cur.svc.(layoutReloader); ok {
			if err := rl.ReloadLayout(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// coordinator is a keyspace.Coordinator over the pool's roles, elected on
// etcd.
func (p *Pool) coordinator(onAction func(keyspace.Action)) (driver, error) {
	p.mu.Lock()
	ingest := map[string]string{}
	for _, name := range p.indexers {
		ingest[name] = p.roles[name].url("find")
	}
	fronts := []string{p.roles[RoleScatter].url("find")}
	p.mu.Unlock()
	cc := keyspace.CoordinatorConfig{
		Store: p.ctl.store, Ingest: ingest, Fronts: fronts, Token: p.shardToken,
		Reload: p.reloadLayout, Poll: 100 * time.Millisecond,
		Logger: p.cfg.Logger.With("part", "coordinator"), OnAction: onAction,
	}
	if p.OnEtcd() {
		return p.etcdDriverFor(cc), nil
	}
	return keyspace.NewCoordinator(cc)
}

// AddQueryNode starts a new query node (role "query-<n>") and adds it to
// the ring: it copies its ranges from their owners while the ingest
// nodes write to both, reads move to it once it has caught up, and the
// old owners then drop what moved. It returns the new role's name once
// the change is done. onAction, when not nil, sees each step.
func (p *Pool) AddQueryNode(ctx context.Context, onAction func(keyspace.Action)) (string, error) {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if p.cfg.Sharded == nil {
		return "", fmt.Errorf("add query node: %w: the pool is not sharded", ErrConfig)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", fmt.Errorf("add query node: %w", ErrClosed)
	}
	r, err := p.addQueryRole(len(p.queries))
	if err == nil {
		p.order = slices.Insert(p.order, 0, r.name)
	}
	p.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("add query node: %w", err)
	}
	if err := p.startRole(ctx, r); err != nil {
		return r.name, fmt.Errorf("add query node: %w", err)
	}
	co, err := p.coordinator(onAction)
	if err != nil {
		return r.name, err
	}
	if err := co.Drive(ctx, keyspace.Goal{Join: &keyspace.Node{Name: r.name, URL: r.url("query")}}); err != nil {
		return r.name, fmt.Errorf("add query node %s: %w", r.name, err)
	}
	return r.name, nil
}

// RemoveQueryNode drains a query node: its ranges are copied to the nodes
// that take them over, reads move, and then the pool stops it. It may be
// stopped or killed already (its ranges are copied from the other owners).
func (p *Pool) RemoveQueryNode(ctx context.Context, name string, onAction func(keyspace.Action)) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if p.cfg.Sharded == nil {
		return fmt.Errorf("remove query node: %w: the pool is not sharded", ErrConfig)
	}
	r, err := p.lookup("remove query node", name)
	if err != nil {
		return err
	}
	if r.kind != KindQuery {
		return fmt.Errorf("remove query node %s: %w: not a query node", name, ErrUnknownRole)
	}
	co, err := p.coordinator(onAction)
	if err != nil {
		return err
	}
	if err := co.Drive(ctx, keyspace.Goal{Leave: name}); err != nil {
		return fmt.Errorf("remove query node %s: %w", name, err)
	}
	if err := p.stop(name, false); err != nil && !errors.Is(err, ErrStopped) {
		return err
	}
	return nil
}

// CheckQueryNode is [Pool.Check] against one query node's own find API,
// for the entries it owns on the layout in force (a removed entry, with
// no values, is asked of its owners too). It returns the check and how
// many of entries the node owns.
func (p *Pool) CheckQueryNode(ctx context.Context, name string, entries []publishernode.Entry) (Check, error) {
	l, err := p.Layout()
	if err != nil {
		return Check{}, err
	}
	pl, err := keyspace.NewPlacement(l)
	if err != nil {
		return Check{}, err
	}
	self := pl.Node(name)
	if self < 0 {
		return Check{}, fmt.Errorf("check %s: %w: not in the layout of epoch %d", name, ErrUnknownRole, l.Epoch)
	}
	var own []publishernode.Entry
	for _, e := range entries {
		mh, err := multihash.FromB58String(e.Multihash)
		if err != nil {
			return Check{}, fmt.Errorf("check %s: entry %s: %w", name, e.Multihash, err)
		}
		if slices.Contains(pl.AppendReadOwners(nil, mh), self) {
			own = append(own, e)
		}
	}
	return p.checkAt(ctx, l.URL(name), own), nil
}

// QueryNodeState is one query node as [Pool.ShardSnapshot] saw it.
type QueryNodeState struct {
	Name, URL string
	// Up: it answered its status; Ready: it answers finds.
	Up, Ready bool
	// Epoch is the layout it acts on.
	Epoch uint64
	// Share is the fraction of the keyspace it owns on the ring reads
	// use (R owners per key: shares add up to R); NextShare on the ring
	// a change moves to (0 when none, or when it leaves).
	Share, NextShare float64
	// Multihashes is its index's count (or estimate) from GET /stats;
	// MultihashesExact says it is a count (EntriesExact).
	Multihashes      int64
	MultihashesExact bool
	// Copy and Drop are its last copy and drop.
	Copy, Drop *keyspace.Task
}

// ShardState is the sharded layers at one moment.
type ShardState struct {
	Layout keyspace.Layout
	// Query are the query nodes of the layout, in its order.
	Query []QueryNodeState
	// Ingest are the ingest nodes' statuses (epoch, outboxes), by name;
	// one that did not answer is missing.
	Ingest map[string]keyspace.Status
}

// shareSamples is the number of keyspace positions a share is
// estimated from.
const shareSamples = 4096

// ShardSnapshot reads the layout and asks every query and ingest node for
// its status.
func (p *Pool) ShardSnapshot(ctx context.Context) (*ShardState, error) {
	l, err := p.Layout()
	if err != nil {
		return nil, err
	}
	pl, err := keyspace.NewPlacement(l)
	if err != nil {
		return nil, err
	}
	st := &ShardState{Layout: l, Ingest: map[string]keyspace.Status{}}
	read := make([]float64, len(l.Nodes))
	nextShare := map[string]float64{}
	var nextPl *keyspace.Placement
	if l.Phase != keyspace.PhaseStable {
		nl := l.Clone()
		nl.Current, nl.Next, nl.Phase = nl.Next, nil, keyspace.PhaseStable
		nl.Nodes = slices.DeleteFunc(nl.Nodes, func(n keyspace.Node) bool { return !slices.Contains(nl.Current, n.Name) })
		if nextPl, err = keyspace.NewPlacement(nl); err != nil {
			return nil, err
		}
	}
	for i := range shareSamples {
		mh, _ := multihash.Sum(binary.BigEndian.AppendUint64(nil, uint64(i)), multihash.SHA2_256, -1)
		for _, o := range pl.AppendReadOwners(nil, mh) {
			read[o]++
		}
		if nextPl != nil {
			for _, o := range nextPl.AppendReadOwners(nil, mh) {
				nextShare[nextPl.Nodes()[o].Name] += 1.0 / shareSamples
			}
		}
	}
	for i, n := range l.Nodes {
		q := QueryNodeState{Name: n.Name, URL: n.URL, Share: read[i] / shareSamples, NextShare: nextShare[n.Name]}
		var s keyspace.Status
		if err := p.getJSON(ctx, n.URL+keyspace.PathStatus, &s); err == nil {
			q.Up, q.Ready, q.Epoch, q.Copy, q.Drop = true, s.Ready, s.Epoch, s.Copy, s.Drop
		}
		var hs health.Stats
		if err := p.getJSON(ctx, n.URL+"/stats", &hs); err == nil {
			q.Multihashes, q.MultihashesExact = hs.EntriesCount, hs.EntriesExact
		}
		st.Query = append(st.Query, q)
	}
	for _, name := range p.Indexers() {
		var s keyspace.Status
		if err := p.getJSON(ctx, p.role(name).url("find")+keyspace.PathStatus, &s); err == nil {
			st.Ingest[name] = s
		}
	}
	return st, nil
}

// layoutScatter is the front end of a sharded pool, which loads its
// layout file again on ReloadLayout: a call of the pool's in goroutine
// mode, a SIGHUP in processes mode.
type layoutScatter struct {
	*scatternode.Scatter
	path string
}

// ReloadLayout reads the layout file and rebuilds the front end's
// backends and ring from it.
func (s *layoutScatter) ReloadLayout() error {
	l, err := keyspace.Load(s.path)
	if err != nil {
		return err
	}
	cfg := s.Config()
	cfg.Layout, cfg.Backends = &l, nil
	_, err = s.Reload(cfg)
	return err
}

// addWriter publishes the next epoch of a stable layout with name among
// its writers, and has every sharded role load it.
func (p *Pool) addWriter(ctx context.Context, name string) error {
	l, rev, err := p.ctl.store.Load(ctx)
	if err != nil {
		return err
	}
	if l.Phase != keyspace.PhaseStable {
		return fmt.Errorf("writer %s: the layout is in phase %s: add it once the change is done", name, l.Phase)
	}
	if slices.Contains(l.Writers, name) {
		return nil
	}
	l.Epoch++
	l.Writers = append(l.Writers, name)
	if _, err := p.ctl.store.Publish(ctx, rev, l); err != nil {
		return err
	}
	return p.reloadLayout(ctx, l)
}
