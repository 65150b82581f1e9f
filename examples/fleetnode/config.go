package fleetnode

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// Timing is the lease timing every node of a fleet shares (the store's
// options travel with each script call or transaction, so all nodes must
// agree on them) and the node's own pacing.
type Timing struct {
	TTL       time.Duration // of a lease
	Window    time.Duration // of an auction: the backstop that closes it
	Liveness  time.Duration // a node is live if it heartbeated within this
	Heartbeat time.Duration // below Liveness
	Scan      time.Duration // mean interval between scans for claimable items
	// MaxBids is the number of bids that close an auction at once; 0:
	// the number of live nodes (lease.WithDynamicMaxBids).
	MaxBids          int
	IndexConcurrency int // concurrent clones and builds
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
	// the agent's default).
	Reconcile time.Duration
	// VerifyEvery is the interval of the integrity check of every index
	// the node holds against its checksum (0: never).
	VerifyEvery time.Duration
}

// DefaultTiming is a fleet of a few nodes on one network: 10 s leases,
// 2 s auction windows, a heartbeat a second.
func DefaultTiming() Timing {
	return Timing{
		TTL: 10 * time.Second, Window: 2 * time.Second, Liveness: 5 * time.Second,
		Heartbeat: time.Second, Scan: 250 * time.Millisecond, MaxBids: 0,
		IndexConcurrency: 2, BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second,
		Replicas: 1, Feed: true, VerifyEvery: time.Minute,
	}
}

// Validate returns an error naming the first field out of range. A
// store may refuse more: lease/etcd keeps TTL, Window and Liveness as
// etcd lease TTLs, whole seconds (see WholeSeconds).
func (t Timing) Validate() error {
	return t.ValidateNamed(func(field string) string { return field })
}

// ValidateNamed is Validate with every field called name(field) in the
// error, such as "TTL" → "-ttl": a program passes its flags' names.
func (t Timing) ValidateNamed(name func(field string) string) error {
	v := func(field string, d any) string { return fmt.Sprintf("%s %v", name(field), d) }
	switch {
	case t.TTL <= 0, t.Window <= 0, t.Liveness <= 0, t.Heartbeat <= 0, t.Scan <= 0:
		return fmt.Errorf("%s, %s, %s, %s and %s must be positive", name("TTL"), name("Window"), name("Liveness"), name("Heartbeat"), name("Scan"))
	case t.Heartbeat >= t.Liveness:
		return fmt.Errorf("%s must be below %s", v("Heartbeat", t.Heartbeat), v("Liveness", t.Liveness))
	case t.MaxBids < 0:
		return fmt.Errorf("%s is negative", v("MaxBids", t.MaxBids))
	case t.Reconcile < 0:
		return fmt.Errorf("%s is negative", v("Reconcile", t.Reconcile))
	case t.VerifyEvery < 0:
		return fmt.Errorf("%s is negative", v("VerifyEvery", t.VerifyEvery))
	case t.IndexConcurrency < 1:
		return fmt.Errorf("%s: want at least 1", v("IndexConcurrency", t.IndexConcurrency))
	case t.Replicas < 1:
		return fmt.Errorf("%s: want at least 1", v("Replicas", t.Replicas))
	case t.BackoffBase <= 0 || t.BackoffMax < t.BackoffBase:
		return fmt.Errorf("%s, %s: want 0 < %s ≤ %s", v("BackoffBase", t.BackoffBase), v("BackoffMax", t.BackoffMax), name("BackoffBase"), name("BackoffMax"))
	}
	return nil
}

// WholeSeconds returns an error, with each field called name(field), if
// TTL, Window or Liveness is not a whole number of seconds ≥ 1s: what
// lease/etcd refuses, checked before a store is made.
func (t Timing) WholeSeconds(name func(field string) string) error {
	v := func(field string, d any) string { return fmt.Sprintf("%s %v", name(field), d) }
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"TTL", t.TTL}, {"Window", t.Window}, {"Liveness", t.Liveness}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			return fmt.Errorf("%s is not a whole number of seconds ≥ 1s (lease/etcd keeps it as an etcd lease TTL, which is whole seconds)", v(d.field, d.v))
		}
	}
	return nil
}

// StoreOptions are the lease store's options for t, with hooks.
func (t Timing) StoreOptions(hooks lease.Hooks) []lease.Option {
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

// DefaultHandoffWait bounds how long a stopping node waits for the
// indexes it offered to be fetched.
const DefaultHandoffWait = 10 * time.Second

// Config is the configuration of one node. The zero value of each field
// but Name, Prefix, Budget and Timing means "none" or "the default";
// DefaultConfig fills in the rest as the fleet program does.
type Config struct {
	// Name is the node's name, unique in the fleet: its leases and its
	// entry in the address table carry it.
	Name string
	// Prefix is the key prefix of the catalog and the side tables.
	Prefix string
	// Budget is the memory, in bytes, the node's indexes may take.
	Budget int64
	// WorkDir holds the temporary clones ("": the system's).
	WorkDir string
	// SnapshotDir is a directory of index snapshots, which the nodes of a
	// fleet may share: each index built from git is written there ("":
	// none).
	SnapshotDir string
	// Rehydrate: load the index of a won repo at the row's commit from the
	// node that offered it on its way out, or from SnapshotDir, instead
	// of cloning and indexing. The settings table's rehydrate entry
	// overrides it at run time.
	Rehydrate bool
	// CredentialHelpers are git credential helpers added to those git is
	// configured with, for the fetches of private repositories (git's
	// own syntax: "store --file=…", "cache", a program).
	CredentialHelpers []string
	// Autoscale: the node's manager runs agent.Scaler and logs its
	// decisions (msg=scale) for whatever starts and stops nodes; Hooks.Scale
	// gets them too.
	Autoscale     bool
	IdleAfter     time.Duration // of the autoscaler: 0, its default
	ScaleCooldown time.Duration // of the autoscaler: 0, its default
	// SaturationRounds: scans without a claim before unclaimed items that
	// fit count as saturated (0: the agent's default).
	SaturationRounds int
	// DrainTimeout bounds the wait for indexing in flight when Run stops.
	DrainTimeout time.Duration
	// HandoffWait: when Run stops, how long the node keeps serving the
	// indexes it offered to their next owners (0: it offers none).
	HandoffWait time.Duration
	Timing
	// Logger gets the node's log lines (nil: none). The fleet program's
	// demo and sim read msg=won, indexed, lost, evicted, scale and
	// handoff from it.
	Logger *slog.Logger
	// Tracer, when set, records spans of claims, indexing and the
	// queries served here (agent.WithTracer); nil records none.
	Tracer trace.Tracer
	// Hooks report what metrics need; each may be nil.
	Hooks Hooks
	// Routes are added to the node's HTTP API, such as the program's
	// "GET /metrics"; a pattern the node serves itself is refused.
	Routes map[string]http.Handler
	// WrapIndexer, when set, wraps the indexer the manager calls: to
	// gate or observe the builds (tests do).
	WrapIndexer func(agent.Indexer) agent.Indexer
}

// DefaultConfig is a node of 256 MiB that loads handed-off indexes and
// snapshots, with DefaultTiming. Name and Prefix are left for the caller.
func DefaultConfig() Config {
	return Config{
		Budget: 256 << 20, Rehydrate: true, DrainTimeout: 10 * time.Second,
		HandoffWait: DefaultHandoffWait, Timing: DefaultTiming(),
	}
}

// validate checks c.
func (c Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("fleetnode: Config.Name is empty")
	case c.Prefix == "":
		return errors.New("fleetnode: Config.Prefix is empty")
	case c.Budget <= 0:
		return fmt.Errorf("fleetnode: Config.Budget %d: want a positive number of bytes", c.Budget)
	case c.DrainTimeout < 0, c.HandoffWait < 0, c.IdleAfter < 0, c.ScaleCooldown < 0:
		return errors.New("fleetnode: Config.DrainTimeout, HandoffWait, IdleAfter and ScaleCooldown must not be negative")
	case c.SaturationRounds < 0:
		return fmt.Errorf("fleetnode: Config.SaturationRounds %d is negative", c.SaturationRounds)
	}
	for _, h := range c.CredentialHelpers {
		if h == "" {
			return errors.New("fleetnode: Config.CredentialHelpers holds an empty helper")
		}
	}
	if err := c.Timing.Validate(); err != nil {
		return fmt.Errorf("fleetnode: Config.Timing: %w", err)
	}
	return nil
}

// Hooks report a node's events to metrics. Each runs on the goroutine of
// the event, so it must be quick; nil hooks are skipped.
type Hooks struct {
	// Claimed: the node won item, which had waited unclaimed for waited
	// since the node's scans first saw it so.
	Claimed func(item string, waited time.Duration)
	// BidClosed: an auction the node bid in closed, won or lost, window
	// after its bid.
	BidClosed func(item string, window time.Duration)
	// IndexTook: an index build or load of item took took; from is where
	// the index came from: "git", "snapshot", "handoff", or "failed".
	IndexTook func(item, from string, took time.Duration)
	// Indexed: the node serves an index of size bytes for item.
	Indexed func(item string, size int64)
	// Scanned: the load signals of each scan (agent.Signals).
	Scanned func(agent.Signals)
	// Scale: a decision of the autoscaler (Config.Autoscale).
	Scale func(agent.Decision, agent.Signals)
}
