package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// tuning is the lease timing every node of a fleet shares (the store's
// options are sent with each script call, so all nodes must agree) and
// the node-side pacing. demo and sim pass theirs to the nodes they start.
type tuning struct {
	TTL              time.Duration
	Window           time.Duration
	Liveness         time.Duration
	Heartbeat        time.Duration
	Scan             time.Duration
	MaxBids          int // 0: dynamic, the number of live nodes
	IndexConcurrency int
	BackoffBase      time.Duration
	BackoffMax       time.Duration
	// Replicas is the number of copies of each repo (lease replication):
	// the primary and Replicas-1 replica slots, on different nodes.
	Replicas int
	// LossGuard holds grants for one TTL after the catalog is found gone
	// (lease.WithLossGuard): for a Redis without durable writes.
	LossGuard bool
	// Feed: learn of catalog changes from the store's change feed and list
	// the catalog only to reconcile; off, list it at every scan.
	Feed bool
	// Reconcile is the interval of the full listings under the feed (0:
	// the agent's default, half the TTL up to 30 s).
	Reconcile time.Duration
	// VerifyEvery is the interval of the integrity check of every index
	// the node holds against its checksum (0: never).
	VerifyEvery time.Duration
}

func defaultTuning() tuning {
	return tuning{
		TTL: 10 * time.Second, Window: 2 * time.Second, Liveness: 5 * time.Second,
		Heartbeat: time.Second, Scan: 250 * time.Millisecond, MaxBids: 0,
		IndexConcurrency: 2, BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second,
		Replicas: 1, Feed: true, VerifyEvery: time.Minute,
	}
}

func (t *tuning) register(fs *flag.FlagSet) {
	fs.DurationVar(&t.TTL, "ttl", t.TTL, "lease time to live")
	fs.DurationVar(&t.Window, "window", t.Window, "auction window (the backstop)")
	fs.DurationVar(&t.Liveness, "liveness", t.Liveness, "a node is live if it heartbeated within this")
	fs.DurationVar(&t.Heartbeat, "heartbeat", t.Heartbeat, "heartbeat interval")
	fs.DurationVar(&t.Scan, "scan", t.Scan, "mean interval between scans for claimable items")
	fs.IntVar(&t.MaxBids, "max-bids", t.MaxBids, "bids that close an auction at once; 0: the number of live nodes")
	fs.IntVar(&t.IndexConcurrency, "index-concurrency", t.IndexConcurrency, "concurrent clones+indexing per node")
	fs.DurationVar(&t.BackoffBase, "backoff", t.BackoffBase, "base of the backoff after a lost or rejected bid")
	fs.DurationVar(&t.BackoffMax, "backoff-max", t.BackoffMax, "cap of that backoff")
	fs.IntVar(&t.Replicas, "replicas", t.Replicas, "copies of each repo on different nodes; reads fall back to a ready replica")
	fs.DurationVar(&t.VerifyEvery, "verify-every", t.VerifyEvery, "interval of the check of every index against the checksum taken when it was built; a corrupted one is dropped and rebuilt (0: never)")
	fs.BoolVar(&t.Feed, "feed", t.Feed, "learn of catalog changes from the store's change feed, listing the catalog only to reconcile; false: list it at every scan")
	fs.DurationVar(&t.Reconcile, "reconcile", t.Reconcile, "interval of the full catalog listings under the feed; 0: half the TTL, at most 30s")
	fs.BoolVar(&t.LossGuard, "loss-guard", t.LossGuard, "hold grants for one TTL after the catalog is found gone, so no repo is granted while a holder from before a Redis data loss still serves it (for a Redis without durable writes; a fresh catalog's first grants wait one TTL too)")
}

// args returns the flags that give a node t.
func (t tuning) args() []string {
	return []string{
		"-ttl", t.TTL.String(), "-window", t.Window.String(), "-liveness", t.Liveness.String(),
		"-heartbeat", t.Heartbeat.String(), "-scan", t.Scan.String(), "-max-bids", strconv.Itoa(t.MaxBids),
		"-index-concurrency", strconv.Itoa(t.IndexConcurrency),
		"-backoff", t.BackoffBase.String(), "-backoff-max", t.BackoffMax.String(),
		"-replicas", strconv.Itoa(t.Replicas), "-loss-guard=" + strconv.FormatBool(t.LossGuard),
		"-feed=" + strconv.FormatBool(t.Feed), "-reconcile", t.Reconcile.String(),
		"-verify-every", t.VerifyEvery.String(),
	}
}

func (t tuning) validate() error {
	switch {
	case t.TTL <= 0, t.Window <= 0, t.Liveness <= 0, t.Heartbeat <= 0, t.Scan <= 0:
		return errors.New("-ttl, -window, -liveness, -heartbeat and -scan must be positive")
	case t.Heartbeat >= t.Liveness:
		return fmt.Errorf("-heartbeat %v must be below -liveness %v", t.Heartbeat, t.Liveness)
	case t.MaxBids < 0:
		return fmt.Errorf("-max-bids %d is negative", t.MaxBids)
	case t.Reconcile < 0:
		return fmt.Errorf("-reconcile %v is negative", t.Reconcile)
	case t.VerifyEvery < 0:
		return fmt.Errorf("-verify-every %v is negative", t.VerifyEvery)
	case t.IndexConcurrency < 1:
		return fmt.Errorf("-index-concurrency %d: want at least 1", t.IndexConcurrency)
	case t.Replicas < 1:
		return fmt.Errorf("-replicas %d: want at least 1", t.Replicas)
	case t.BackoffBase <= 0 || t.BackoffMax < t.BackoffBase:
		return fmt.Errorf("-backoff %v, -backoff-max %v: want 0 < backoff ≤ backoff-max", t.BackoffBase, t.BackoffMax)
	}
	return nil
}

// validateFor is validate, and on etcd checkEtcdTiming.
func (t tuning) validateFor(store string) error {
	if err := t.validate(); err != nil {
		return err
	}
	if store == storeEtcd {
		return t.checkEtcdTiming()
	}
	return nil
}

// storeOptions are the lease store's options for t.
func (t tuning) storeOptions(hooks lease.Hooks) []lease.Option {
	opts := []lease.Option{lease.WithTTL(t.TTL), lease.WithAuctionWindow(t.Window), lease.WithHooks(hooks)}
	if t.LossGuard {
		opts = append(opts, lease.WithLossGuard())
	}
	if t.MaxBids > 0 {
		opts = append(opts, lease.WithMaxBids(t.MaxBids))
	} else {
		opts = append(opts, lease.WithDynamicMaxBids(t.Liveness))
	}
	return opts
}

// byteSize is a flag of bytes: 1048576, 512KiB, 64MiB, 2GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want bytes such as 1048576, 512KiB, 64MiB or 2GiB")
	}
	*b = byteSize(n * mult)
	return nil
}

// nodeConfig is the configuration of one fleet node.
type nodeConfig struct {
	Name        string
	Prefix      string
	Listen      string
	Budget      byteSize
	WorkDir     string
	SnapshotDir string // "" writes and loads no snapshots
	// Rehydrate: with a snapshot directory, load the snapshot of a repo
	// won at a commit that has one instead of cloning and indexing (the
	// settings table's rehydrate overrides it).
	Rehydrate bool
	// CredentialHelpers are git credential helpers added to those git is
	// configured with, for the fetches of private repositories.
	CredentialHelpers []string
	// Autoscale: the node's manager runs agent.Scaler and logs its
	// decisions (msg=scale), for whatever starts and stops nodes.
	Autoscale bool
	// SaturationRounds: scans without a claim before unclaimed items that
	// fit count as saturated (0: the agent's default).
	SaturationRounds int
	// TraceFile: append the OpenTelemetry spans of claims, indexing and
	// queries served here to this file as JSON ("": none).
	TraceFile     string
	IdleAfter     time.Duration // of the autoscaler: 0, its default (1 min)
	ScaleCooldown time.Duration // of the autoscaler: 0, its default (30 s)
	DrainTimeout  time.Duration
	// HandoffWait: on SIGTERM, how long the node keeps serving the indexes
	// it offered (handoff.go) for their next owners to fetch.
	HandoffWait time.Duration
	LogLevel    string
	storeFlags
	tuning
}

func parseNodeFlags(args []string, stderr io.Writer) (nodeConfig, error) {
	host, _ := os.Hostname()
	c := nodeConfig{
		Name: fmt.Sprintf("%s-%d", host, os.Getpid()), Prefix: "fleet:",
		Listen: "127.0.0.1:0", Budget: 256 << 20, Rehydrate: true, DrainTimeout: 10 * time.Second, HandoffWait: handoffWaitDefault, LogLevel: "info",
		storeFlags: storeFlags{Store: storeRedis, Redis: "127.0.0.1:6379", Etcd: "127.0.0.1:2379"},
		tuning:     defaultTuning(),
	}
	fs := flag.NewFlagSet("fleet node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describe(fs, "node")
	fs.StringVar(&c.Name, "name", c.Name, "node name, unique in the fleet")
	c.storeFlags.register(fs, "Redis address of the catalog (-store redis)", "comma-separated etcd endpoints of the catalog (-store etcd)")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "key prefix of the catalog and the side tables in the store")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address (port 0: any free port, logged)")
	fs.Var(&c.Budget, "budget", "memory budget for indexes (bytes, or with KiB, MiB, GiB)")
	fs.StringVar(&c.WorkDir, "work-dir", c.WorkDir, "directory for temporary clones (default: the system's)")
	fs.StringVar(&c.SnapshotDir, "snapshot-dir", c.SnapshotDir, "directory of index snapshots, which the nodes of a fleet may share: each built index is written there, and with -rehydrate a won repo is loaded from it (\"\": none)")
	fs.BoolVar(&c.Autoscale, "autoscale", c.Autoscale, "run the agent's autoscaler: log a decision (msg=scale decision=grow|shrink) when items that fit find no room, or when this node has been idle for -idle-after with nothing waiting")
	fs.StringVar(&c.TraceFile, "trace-file", c.TraceFile, "append OpenTelemetry spans (agent.claim, agent.index, agent.serve) to this file as JSON, one object per span (\"\": none)")
	fs.DurationVar(&c.IdleAfter, "idle-after", c.IdleAfter, "with -autoscale: idle time (no lease held, no query served) after which the node asks to be stopped (0: 1m)")
	fs.DurationVar(&c.ScaleCooldown, "scale-cooldown", c.ScaleCooldown, "with -autoscale: quiet time after each decision (0: 30s)")
	fs.IntVar(&c.SaturationRounds, "saturation-rounds", c.SaturationRounds, "scans in a row without a claim before unclaimed items that fit a node count as saturated (0: the agent's default, 20)")
	fs.BoolVar(&c.Rehydrate, "rehydrate", c.Rehydrate, "load the index of a won repo at the row's commit from -snapshot-dir, when there is one, or from the node that handed it off on its SIGTERM, instead of cloning and indexing (false: only write snapshots)")
	fs.Func("git-credential-helper", "a git credential helper for fetching private repositories, added to those git is configured with (repeatable; e.g. 'store --file=/run/secrets/git-credentials', 'cache', or a program's path)", func(v string) error {
		if v == "" {
			return errors.New("empty credential helper")
		}
		c.CredentialHelpers = append(c.CredentialHelpers, v)
		return nil
	})
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM, how long to wait for in-flight indexing before releasing")
	fs.DurationVar(&c.HandoffWait, "handoff-wait", c.HandoffWait, "on SIGTERM, how long to keep serving the ready indexes this node offers to their next owners (GET /snapshot) until each was fetched (0: offer none)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	c.tuning.register(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("fleet node: unexpected arguments %q", fs.Args())
	}
	switch {
	case c.Name == "":
		return c, errors.New("-name is empty")
	case c.Prefix == "":
		return c, errors.New("-prefix is empty")
	case c.Budget <= 0:
		return c, errors.New("-budget must be positive")
	}
	if err := c.storeFlags.check(fs); err != nil {
		return c, err
	}
	return c, c.tuning.validateFor(c.Store)
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

// node is a running fleet node.
type node struct {
	cfg  nodeConfig
	log  *slog.Logger
	tab  sideTables
	prom *promMetrics
	// tp records the spans of -trace-file, nil without it; its own
	// provider, never the global one.
	tp       *sdktrace.TracerProvider
	traceOut *os.File
	store    fleetStore
	mgr      *agent.Manager
	idx      *repoIndexer
	addr     string
	client   *http.Client
	c        counters
	handing  handing // the indexes offered on SIGTERM (handoff.go)
}

// hooks connect the store's, the leases' and the manager's events to the
// node's counters and log: the lines msg=bid, won, indexed, evicted and
// lost are what demo and sim read from their nodes. The store reports the
// auctions this node closed; the bid and lease events come from the
// manager and its leases (mgr.Lease) only, so that each is counted once.
func (n *node) hooks() (store lease.Hooks, mgr agent.Hooks) {
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
			n.prom.indexBytes.Observe(float64(size))
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
		Claimed:   func(_ lease.Ref, waited time.Duration) { n.prom.claimLatency.Observe(waited.Seconds()) },
		BidClosed: func(_ string, window time.Duration) { n.prom.bidWindow.Observe(window.Seconds()) },
		IndexTook: func(ref lease.Ref, took time.Duration, err error) {
			from := "failed"
			if ri := n.idx.get(ref.Item); err == nil && ri != nil {
				from = ri.From
			}
			n.prom.indexTime.WithLabelValues(from).Observe(took.Seconds())
		},
		Scanned: n.prom.scanned,
		Scale: func(d agent.Decision, s agent.Signals) {
			n.prom.scale.WithLabelValues(d.String()).Inc()
			n.log.Info("scale", "decision", d.String(), "saturated", s.Saturated, "unclaimed", s.Unclaimed, "nodes_wanted", s.NodesWanted(),
				"held", s.Held, "live_nodes", s.LiveNodes, "idle", s.Idle().Round(time.Millisecond))
		},
		Reused: func(ref lease.Ref, size int64) {
			n.c.Reused.Add(1)
			n.log.Info("reused", "item", ref.Item, "size", size)
		},
		Starved: func(item string, need int64) {
			n.c.Starved.Add(1)
			n.log.Info("starved", "item", item, "need", need, "budget", int64(n.cfg.Budget))
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

// runNode is `fleet node`: it serves until ctx is done, then drains.
func runNode(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseNodeFlags(args, stderr)
	if err != nil {
		return err
	}
	level, err := cli.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := cli.NewLogger(stderr, level)

	b, err := dial(ctx, cfg.storeFlags, 16)
	if err != nil {
		return err
	}
	defer b.Close()

	n, err := newNode(cfg, log, b, nil)
	if err != nil {
		return err
	}
	defer n.close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	n.addr = ln.Addr().String()
	cli.LogListening(log, "http", n.addr)
	if err := n.publishAddr(ctx); err != nil {
		ln.Close()
		return err
	}
	log.Info("starting", "node", cfg.Name, "store", cfg.storeFlags.String(), "prefix", cfg.Prefix, "budget", int64(cfg.Budget),
		"ttl", cfg.TTL, "window", cfg.Window, "max_bids", cfg.MaxBids, "replicas", cfg.Replicas)

	eg, gctx := errgroup.WithContext(ctx)
	// The manager and the HTTP server stop after the rest: first the node
	// offers its indexes (handoff.go), then the manager drains, and the
	// server serves the offered indexes until they are fetched.
	mctx, stopMgr := context.WithCancel(context.WithoutCancel(gctx))
	hctx, stopHTTP := context.WithCancel(context.WithoutCancel(gctx))
	defer stopMgr()
	defer stopHTTP()
	httpserve.Serve(hctx, eg, "http", httpserve.NewServer(n.handler(), log), ln, 5*time.Second)
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
	log.Info("shutting down", "held", len(n.mgr.Held()))
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
	err = eg.Wait()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if derr := n.tab.addrs.Delete(dctx, cfg.Name); derr != nil {
		log.Warn("unpublish address", "err", derr)
	}
	cancel()
	if err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// newNode builds the node's store, side tables, indexer and manager on b;
// wrap, when not nil, wraps the indexer the manager calls (tests gate it).
// close undoes it; b stays open.
func newNode(cfg nodeConfig, log *slog.Logger, b *backend, wrap func(agent.Indexer) agent.Indexer) (_ *node, err error) {
	n := &node{cfg: cfg, log: log, tab: b.tables(cfg.Prefix), prom: newPromMetrics(), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	n.idx = newRepoIndexer(cfg.WorkDir, n.cloneURL)
	n.idx.credentialHelpers = cfg.CredentialHelpers
	n.idx.rehydrate.Store(cfg.Rehydrate)
	n.idx.handoff = n.fetchHandoff
	if cfg.SnapshotDir != "" {
		n.idx.snaps = &snapshots{dir: cfg.SnapshotDir}
	}
	n.idx.snapshotErr = func(item string, loading bool, err error) {
		if loading && errors.Is(err, errCorrupt) {
			n.c.SnapshotsCorrupt.Add(1)
			n.log.Error("snapshot corrupt: not used, indexing from git", "item", item, "err", err)
			return
		}
		n.c.SnapshotErrors.Add(1)
		n.log.Warn("snapshot", "item", item, "loading", loading, "err", err)
	}
	var idx agent.Indexer = n.idx
	if wrap != nil {
		idx = wrap(idx)
	}
	sh, mh := n.hooks()
	// Assigned only once made: a failed newStore's typed nil in the
	// interface would make close call Close on a nil store.
	st, err := b.newStore(cfg.Prefix, cfg.storeOptions(sh)...)
	if err != nil {
		return nil, err
	}
	n.store = st
	mopts := []agent.Option{
		agent.WithIndexer(idx),
		agent.WithBudget(int64(cfg.Budget)),
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
	if cfg.TraceFile != "" {
		if n.traceOut, err = os.OpenFile(cfg.TraceFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("-trace-file: %w", err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(n.traceOut))
		if err != nil {
			n.traceOut.Close()
			return nil, fmt.Errorf("-trace-file: %w", err)
		}
		n.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		mopts = append(mopts, agent.WithTracer(n.tp.Tracer("github.com/indexkit/indexkit/examples/fleet")))
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

// keepVerified checks every index the node holds against its checksum
// every VerifyEvery: a corrupted one answers no query from the moment it
// is found (queries about it are told it is warming, as before its first
// index), is counted and logged, and is rebuilt from its repository.
func (n *node) keepVerified(ctx context.Context) {
	t := time.NewTicker(n.cfg.VerifyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.verifyOnce(ctx)
	}
}

// verifyOnce runs one integrity check of every index and returns the
// number of corrupted ones found.
func (n *node) verifyOnce(ctx context.Context) int {
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

func (n *node) close() {
	n.client.CloseIdleConnections()
	if n.tp != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.tp.Shutdown(sctx); err != nil {
			n.log.Warn("trace file", "err", err)
		}
		cancel()
		_ = n.traceOut.Close()
	}
	if n.store != nil {
		_ = n.store.Close()
	}
}

// publishAddr writes the node's HTTP address into the fleet's address
// table, where other nodes look owners up to route queries.
func (n *node) publishAddr(ctx context.Context) error {
	if err := n.tab.addrs.Set(ctx, map[string]string{n.cfg.Name: n.addr}); err != nil {
		return fmt.Errorf("publish address: %w", err)
	}
	return nil
}

// keepAddr checks the address at every heartbeat and writes it again when
// it is missing or different, so that it comes back if the store lost it
// (a read per heartbeat, not a write: on etcd a write is a new revision
// in the history).
func (n *node) keepAddr(ctx context.Context) error {
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if a, err := n.tab.addrs.Get(ctx, n.cfg.Name); err == nil && a == n.addr {
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
func (n *node) cloneURL(ctx context.Context, item string) (string, error) {
	item, _ = lease.SplitReplicaID(item)
	u, err := n.tab.repos.Get(ctx, item)
	if errors.Is(err, errNoEntry) {
		return "", fmt.Errorf("%w %s", errUnknownRepo, item)
	}
	if err != nil {
		return "", fmt.Errorf("look up clone URL: %w", err)
	}
	return u, nil
}

// listOnly hides a store's change feed from the agent, which then lists
// the catalog at every scan (-feed=false).
type listOnly struct{ l lease.Lister }

func (o listOnly) Rows(ctx context.Context) iter.Seq2[lease.Row, error] { return o.l.Rows(ctx) }
