package fleetnode

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// ErrRunTwice is returned by a second Run, or a Run after Close.
var ErrRunTwice = errkind.New(errkind.RunTwice, "fleetnode: Run called twice or after Close")

// shutdownTimeout bounds the HTTP server's graceful shutdown.
const shutdownTimeout = 5 * time.Second

// Node is one fleet node: an agent.Manager over the fleet's lease store,
// the indexer it calls (clone, build, snapshot, handoff), and the HTTP
// API. Build it with New, run it with Run, release it with Close.
type Node struct {
	cfg     Config
	log     *slog.Logger
	tab     Tables
	store   Store
	mgr     *agent.Manager
	idx     *repoIndexer
	ln      net.Listener
	addr    string
	client  *http.Client
	c       counters
	handing handing // the indexes offered as Run stops (handoff.go)
	runOnce sync.Once
	closed  atomic.Bool
}

// New builds a node on b from cfg, serving its HTTP API on ln once Run
// runs: its lease store, side tables, indexer and manager. It validates
// cfg (every error names the field) and starts no goroutine. The node
// takes ln, and Close closes it if Run never ran; when New fails, ln stays
// the caller's.
func New(cfg Config, b Backend, ln net.Listener) (_ *Node, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if b == nil || ln == nil {
		return nil, errors.New("fleetnode: New needs a Backend and a listener")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{cfg: cfg, log: log, tab: b.Tables(cfg.Prefix), ln: ln, addr: ln.Addr().String(),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	defer func() {
		if err != nil {
			n.client.CloseIdleConnections()
			if n.store != nil {
				_ = n.store.Close()
			}
		}
	}()
	for pattern := range cfg.Routes {
		if slices.Contains(ownRoutes, pattern) {
			return nil, fmt.Errorf("fleetnode: Config.Routes: the node serves %q itself", pattern)
		}
	}
	n.idx = newRepoIndexer(cfg.WorkDir, n.cloneURL)
	n.idx.credentialHelpers = cfg.CredentialHelpers
	n.idx.rehydrate.Store(cfg.Rehydrate)
	n.idx.handoff = n.fetchHandoff
	if cfg.SnapshotDir != "" {
		d := codeindex.Dir(cfg.SnapshotDir)
		n.idx.snaps = &d
	}
	n.idx.snapshotErr = func(item string, loading bool, err error) {
		if loading && errors.Is(err, codeindex.ErrCorrupt) {
			n.c.SnapshotsCorrupt.Add(1)
			n.log.Error("snapshot corrupt: not used, indexing from git", "item", item, "err", err)
			return
		}
		n.c.SnapshotErrors.Add(1)
		n.log.Warn("snapshot", "item", item, "loading", loading, "err", err)
	}
	var idx agent.Indexer = n.idx
	if cfg.WrapIndexer != nil {
		idx = cfg.WrapIndexer(idx)
	}
	sh, mh := n.hooks()
	// Assigned only once made: a failed NewStore's typed nil in the
	// interface would make Close call Close on a nil store.
	st, err := b.NewStore(cfg.Prefix, cfg.StoreOptions(sh)...)
	if err != nil {
		return nil, err
	}
	n.store = st
	mopts := []agent.Option{
		agent.WithIndexer(idx),
		agent.WithBudget(cfg.Budget),
		agent.WithIndexConcurrency(cfg.IndexConcurrency),
		agent.WithHeartbeatInterval(cfg.Heartbeat),
		agent.WithScanInterval(cfg.Scan),
		agent.WithBidBackoff(cfg.BackoffBase, cfg.BackoffMax),
		agent.WithDrainTimeout(cfg.DrainTimeout),
		agent.WithTTL(cfg.TTL),
		agent.WithHooks(mh),
		agent.WithLogger(log),
	}
	if cfg.Replicas > 1 {
		mopts = append(mopts, agent.WithReplication())
	}
	if cfg.SaturationRounds > 0 {
		mopts = append(mopts, agent.WithSaturationRounds(cfg.SaturationRounds))
	}
	if cfg.Tracer != nil {
		mopts = append(mopts, agent.WithTracer(cfg.Tracer))
	}
	if cfg.Autoscale {
		mopts = append(mopts, agent.WithAutoscaler(&agent.Scaler{IdleAfter: cfg.IdleAfter, MinNodes: 1, Cooldown: cfg.ScaleCooldown}))
	}
	switch {
	case !cfg.Feed:
		// A Lister that is no Watcher: the agent lists at every scan.
		mopts = append(mopts, agent.WithItemSource(listOnly{n.store}))
	case cfg.Reconcile > 0:
		mopts = append(mopts, agent.WithReconcileInterval(cfg.Reconcile))
	}
	n.mgr, err = agent.NewManager(n.store, cfg.Name, mopts...)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// Addr is the host:port of the node's HTTP API, as published in the
// fleet's address table.
func (n *Node) Addr() string { return n.addr }

// Name is the node's name (Config.Name).
func (n *Node) Name() string { return n.cfg.Name }

// Store is the node's lease store of the catalog: a program may put rows
// through it (PutCatalog) as through any store on the same Backend and
// prefix.
func (n *Node) Store() Store { return n.store }

// Manager is the node's agent.Manager: what it holds, its used memory,
// its starved items.
func (n *Node) Manager() *agent.Manager { return n.mgr }

// Run publishes the node's address, serves its HTTP API, and runs the
// manager (bids, holds, indexes, evicts), the address and settings
// checks at each heartbeat and the integrity checks, until ctx is done or
// the manager fails. Then it stops in order: it offers its ready indexes
// to their next owners (Config.HandoffWait), lets the manager drain and
// release, keeps serving the offered indexes until they are fetched,
// stops the server and removes its address. It returns the manager's
// error, if any, after every goroutine it started has exited.
func (n *Node) Run(ctx context.Context) error {
	first := false
	n.runOnce.Do(func() { first = true })
	if !first || n.closed.Load() {
		return ErrRunTwice
	}
	if err := n.publishAddr(ctx); err != nil {
		_ = n.ln.Close()
		return err
	}
	cfg := n.cfg
	n.log.Info("starting", "node", cfg.Name, "prefix", cfg.Prefix, "budget", cfg.Budget,
		"ttl", cfg.TTL, "window", cfg.Window, "max_bids", cfg.MaxBids, "replicas", cfg.Replicas)

	eg, gctx := errgroup.WithContext(ctx)
	// The manager and the HTTP server stop after the rest: first the node
	// offers its indexes (handoff.go), then the manager drains, and the
	// server serves the offered indexes until they are fetched.
	mctx, stopMgr := context.WithCancel(context.WithoutCancel(gctx))
	hctx, stopHTTP := context.WithCancel(context.WithoutCancel(gctx))
	defer stopMgr()
	defer stopHTTP()
	httpserve.Serve(hctx, eg, "http", httpserve.NewServer(n.Handler(), n.log), n.ln, shutdownTimeout)
	mgrDone := make(chan struct{})
	eg.Go(func() error {
		defer close(mgrDone)
		err := n.mgr.Run(mctx)
		if err != nil {
			stopHTTP() // the node cannot go on
		}
		return err
	})
	eg.Go(func() error { return n.keepAddr(gctx) })
	eg.Go(func() error { return n.keepSettings(gctx) })
	if cfg.VerifyEvery > 0 {
		eg.Go(func() error { n.keepVerified(gctx); return nil })
	}
	<-gctx.Done()
	n.log.Info("shutting down", "held", len(n.mgr.Held()))
	var offered []string
	if cfg.HandoffWait > 0 {
		octx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		offered = n.offerHandoffs(octx)
		cancel()
	}
	stopMgr()
	<-mgrDone
	n.awaitHandoffs(offered, cfg.HandoffWait, 2*cfg.Window+cfg.TTL)
	stopHTTP()
	err := eg.Wait()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if derr := n.tab.Addrs.Delete(dctx, cfg.Name); derr != nil {
		n.log.Warn("unpublish address", "err", derr)
	}
	cancel()
	if err != nil {
		n.log.Error("stopped", "err", err)
		return err
	}
	n.log.Info("stopped")
	return nil
}

// Close releases the node's store, connections and, if Run never ran,
// its listener. Call it after Run returned.
func (n *Node) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	ran := true
	n.runOnce.Do(func() { ran = false })
	if !ran {
		_ = n.ln.Close()
	}
	n.client.CloseIdleConnections()
	return n.store.Close()
}

// counters are a node's event counts, shown by GET /status and exported
// on GET /metrics.
type counters struct {
	BidsPlaced, BidsRejected                      atomic.Int64
	Won, Indexed, IndexErrors, Evicted, Lost      atomic.Int64
	Reused, Starved, AuctionsStarved              atomic.Int64
	IndexCorrupt, RebuildErrors                   atomic.Int64
	SnapshotsLoaded, SnapshotsCorrupt             atomic.Int64
	HandoffsLoaded                                atomic.Int64
	SnapshotErrors                                atomic.Int64
	AuctionsShortCircuited, AuctionsTimedOut      atomic.Int64
	AuctionsNoWinner                              atomic.Int64
	QueriesLocal, QueriesRouted, QueriesWarming   atomic.Int64
	QueriesUnassigned, QueriesUnknown, QueriesBad atomic.Int64
}

func (c *counters) snapshot() map[string]int64 {
	return map[string]int64{
		"bids_placed": c.BidsPlaced.Load(), "bids_rejected": c.BidsRejected.Load(),
		"won": c.Won.Load(), "indexed": c.Indexed.Load(), "index_errors": c.IndexErrors.Load(),
		"evicted": c.Evicted.Load(), "lost": c.Lost.Load(),
		"reused": c.Reused.Load(), "starved": c.Starved.Load(), "auctions_starved": c.AuctionsStarved.Load(),
		"auctions_short_circuited": c.AuctionsShortCircuited.Load(), "auctions_timed_out": c.AuctionsTimedOut.Load(),
		"auctions_no_winner": c.AuctionsNoWinner.Load(),
		"index_corrupt":      c.IndexCorrupt.Load(), "index_rebuild_errors": c.RebuildErrors.Load(),
		"snapshots_loaded": c.SnapshotsLoaded.Load(), "handoffs_loaded": c.HandoffsLoaded.Load(), "snapshots_corrupt": c.SnapshotsCorrupt.Load(),
		"snapshot_errors": c.SnapshotErrors.Load(),
		"queries_local":   c.QueriesLocal.Load(), "queries_routed": c.QueriesRouted.Load(),
		"queries_warming": c.QueriesWarming.Load(), "queries_unassigned": c.QueriesUnassigned.Load(),
		"queries_unknown": c.QueriesUnknown.Load(), "queries_bad": c.QueriesBad.Load(),
	}
}

// hooks connect the store's, the leases' and the manager's events to the
// node's counters and log: the lines msg=bid, won, indexed, evicted and
// lost are what demo and sim read from their nodes. The store reports the
// auctions this node closed; the bid and lease events come from the
// manager and its leases (mgr.Lease) only, so that each is counted once.
func (n *Node) hooks() (store lease.Hooks, mgr agent.Hooks) {
	store = lease.Hooks{
		AuctionShortCircuited: func(lease.AuctionResult) { n.c.AuctionsShortCircuited.Add(1) },
		AuctionTimedOut:       func(lease.AuctionResult) { n.c.AuctionsTimedOut.Add(1) },
		AuctionNoWinner:       func(lease.AuctionResult) { n.c.AuctionsNoWinner.Add(1) },
		ItemStarved: func(item string, unleased int) {
			n.c.AuctionsStarved.Add(1)
			n.log.Warn("auction starved", "item", item, "unleased", unleased)
		},
	}
	mgr = agent.Hooks{
		BidPlaced: func(item, _ string, free int64) {
			n.c.BidsPlaced.Add(1)
			n.log.Debug("bid", "item", item, "free", free)
		},
		BidRejected: func(item, _ string, reason error) {
			n.c.BidsRejected.Add(1)
			n.log.Debug("bid rejected", "item", item, "reason", reason.Error())
		},
		Won: func(ref lease.Ref) {
			n.c.Won.Add(1)
			n.log.Info("won", "item", ref.Item, "fence", uint64(ref.Fence))
		},
		Indexed: func(ref lease.Ref, size int64, err error) {
			if err != nil {
				n.c.IndexErrors.Add(1)
				n.log.Info("indexed", "item", ref.Item, "err", err.Error())
				return
			}
			n.c.Indexed.Add(1)
			if h := n.cfg.Hooks.Indexed; h != nil {
				h(ref.Item, size)
			}
			attrs := []any{"item", ref.Item, "size", size}
			if ri := n.idx.get(ref.Item); ri != nil {
				attrs = append(attrs, "commit", ri.Commit, "files", ri.Files(), "took", ri.Took.Round(time.Millisecond), "from", ri.From)
				switch ri.From {
				case "snapshot":
					n.c.SnapshotsLoaded.Add(1)
				case "handoff":
					n.c.HandoffsLoaded.Add(1)
				}
			}
			n.log.Info("indexed", attrs...)
		},
		Claimed: func(ref lease.Ref, waited time.Duration) {
			if h := n.cfg.Hooks.Claimed; h != nil {
				h(ref.Item, waited)
			}
		},
		BidClosed: n.cfg.Hooks.BidClosed,
		IndexTook: func(ref lease.Ref, took time.Duration, err error) {
			if h := n.cfg.Hooks.IndexTook; h != nil {
				from := "failed"
				if ri := n.idx.get(ref.Item); err == nil && ri != nil {
					from = ri.From
				}
				h(ref.Item, from, took)
			}
		},
		Scanned: n.cfg.Hooks.Scanned,
		Scale: func(d agent.Decision, s agent.Signals) {
			if h := n.cfg.Hooks.Scale; h != nil {
				h(d, s)
			}
			n.log.Info("scale", "decision", d.String(), "saturated", s.Saturated, "unclaimed", s.Unclaimed, "nodes_wanted", s.NodesWanted(),
				"held", s.Held, "live_nodes", s.LiveNodes, "idle", s.Idle().Round(time.Millisecond))
		},
		Reused: func(ref lease.Ref, size int64) {
			n.c.Reused.Add(1)
			n.log.Info("reused", "item", ref.Item, "size", size)
		},
		Starved: func(item string, need int64) {
			n.c.Starved.Add(1)
			n.log.Info("starved", "item", item, "need", need, "budget", n.cfg.Budget)
		},
		Evicted: func(ref lease.Ref, size int64) {
			n.c.Evicted.Add(1)
			n.log.Info("evicted", "item", ref.Item, "size", size)
		},
		Lease: lease.HolderHooks{
			LeaseLost: func(ref lease.Ref, reason error) {
				if errors.Is(reason, lease.ErrReleased) {
					return
				}
				n.c.Lost.Add(1)
				n.log.Info("lost", "item", ref.Item, "fence", uint64(ref.Fence), "reason", reason.Error())
			},
		},
	}
	return store, mgr
}

// keepVerified checks every index the node holds against its checksum
// every VerifyEvery: a corrupted one answers no query from the moment it
// is found (queries about it are told it is warming, as before its first
// index), is counted and logged, and is rebuilt from its repository.
func (n *Node) keepVerified(ctx context.Context) {
	t := time.NewTicker(n.cfg.VerifyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.Verify(ctx)
	}
}

// Verify runs one integrity check of every index the node serves, as Run
// does every Timing.VerifyEvery, and returns the number of corrupted ones
// it found: each is dropped at once (queries about it are told it is
// warming), logged (msg="index corrupt: dropped, rebuilding"), counted
// (index_corrupt) and rebuilt at its commit.
func (n *Node) Verify(ctx context.Context) int {
	return n.idx.verify(ctx, func(item, commit string, err error) {
		n.c.IndexCorrupt.Add(1)
		n.log.Error("index corrupt: dropped, rebuilding", "item", item, "commit", commit, "err", err)
	}, func(item string, err error) {
		if err != nil {
			n.c.RebuildErrors.Add(1)
			n.log.Error("index not rebuilt", "item", item, "err", err)
			return
		}
		n.log.Info("index rebuilt", "item", item)
	})
}

// publishAddr writes the node's HTTP address into the fleet's address
// table, where other nodes look owners up to route queries.
func (n *Node) publishAddr(ctx context.Context) error {
	if err := n.tab.Addrs.Set(ctx, map[string]string{n.cfg.Name: n.addr}); err != nil {
		return fmt.Errorf("publish address: %w", err)
	}
	return nil
}

// keepAddr checks the address at every heartbeat and writes it again when
// it is missing or different, so that it comes back if the store lost it
// (a read per heartbeat, not a write: on etcd a write is a new revision
// in the history).
func (n *Node) keepAddr(ctx context.Context) error {
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if a, err := n.tab.Addrs.Get(ctx, n.cfg.Name); err == nil && a == n.addr {
				continue
			}
			if err := n.publishAddr(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("heartbeat address", "err", err)
			}
		}
	}
}

// cloneURL looks up the clone URL the catalog keeps for item, or for the
// item a replica slot copies.
func (n *Node) cloneURL(ctx context.Context, item string) (string, error) {
	item, _ = lease.SplitReplicaID(item)
	u, err := n.tab.Repos.Get(ctx, item)
	if errors.Is(err, ErrNoEntry) {
		return "", fmt.Errorf("%w %s", errUnknownRepo, item)
	}
	if err != nil {
		return "", fmt.Errorf("look up clone URL: %w", err)
	}
	return u, nil
}

// listOnly hides a store's change feed from the agent, which then lists
// the catalog at every scan (Timing.Feed false).
type listOnly struct{ l lease.Lister }

func (o listOnly) Rows(ctx context.Context) iter.Seq2[lease.Row, error] { return o.l.Rows(ctx) }
