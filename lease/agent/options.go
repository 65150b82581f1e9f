package agent

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/indexkit/indexkit/lease"
)

// Option configures a [Manager]. An option given an invalid value makes
// [NewManager] fail with an error wrapping [lease.ErrInvalidOption].
type Option func(*config) error

type config struct {
	idx          Indexer
	budget       int64
	concurrency  int
	heartbeat    time.Duration
	renew        time.Duration
	scan         time.Duration
	backoffBase  time.Duration
	backoffMax   time.Duration
	drainTimeout time.Duration
	policy       EvictionPolicy
	source       lease.Lister
	leaseOpts    []lease.Option // TTL and clock, checked by lease.NewConfig
	margin       time.Duration  // of the leases; 0: a tenth of the TTL
	hooks        Hooks
	log          *slog.Logger
	replication  bool
	keepLost     time.Duration // 0: the TTL; negative: off (keep.go)
	reconcile    time.Duration // -1: the default
	saturation   int           // scans of WithSaturationRounds
	autoscaler   Autoscaler
	tracer       trace.Tracer // nil: no spans
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lease.ErrInvalidOption)...)
}

// WithIndexer sets the indexer (required).
func WithIndexer(idx Indexer) Option {
	return func(c *config) error {
		if idx == nil {
			return invalid("nil indexer")
		}
		c.idx = idx
		return nil
	}
}

// WithBudget sets the node's memory budget in bytes (default 1 GiB).
func WithBudget(b int64) Option {
	return func(c *config) error {
		if b <= 0 {
			return invalid("budget %d", b)
		}
		c.budget = b
		return nil
	}
}

// WithIndexConcurrency bounds concurrent Index calls (default 2).
func WithIndexConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("index concurrency %d", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithHeartbeatInterval sets how often the node heartbeats (default 10s).
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("heartbeat interval %v", d)
		}
		c.heartbeat = d
		return nil
	}
}

// WithRenewInterval sets how often held leases are renewed, in one batch
// (default a third of the TTL set with [WithTTL]). It must be well below
// the store's TTL minus the safety margin.
func WithRenewInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("renew interval %v", d)
		}
		c.renew = d
		return nil
	}
}

// WithScanInterval sets the mean interval between scans for claimable
// items; each wait is jittered uniformly in [d/2, 3d/2) (default 1s).
func WithScanInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("scan interval %v", d)
		}
		c.scan = d
		return nil
	}
}

// WithBidBackoff sets the per-item backoff after a rejected or lost bid:
// full jitter over base × 2^attempts, capped at max (default 1s, 1m).
func WithBidBackoff(base, max time.Duration) Option {
	return func(c *config) error {
		if base <= 0 || max < base {
			return invalid("backoff %v..%v", base, max)
		}
		c.backoffBase, c.backoffMax = base, max
		return nil
	}
}

// WithDrainTimeout bounds how long shutdown waits for in-flight indexing
// before releasing (default 30s). A negative timeout abandons held leases
// on shutdown, as a crash would: they are neither drained nor released
// and lapse at their TTL.
func WithDrainTimeout(d time.Duration) Option {
	return func(c *config) error { c.drainTimeout = d; return nil }
}

// WithEviction sets the eviction policy (default [EvictLRU]).
func WithEviction(p EvictionPolicy) Option {
	return func(c *config) error {
		if p == nil {
			return invalid("nil eviction policy")
		}
		c.policy = p
		return nil
	}
}

// WithItemSource sets where the manager finds items to bid on; by default
// (or when src is nil) the store, which must then implement
// [lease.Lister].
func WithItemSource(src lease.Lister) Option {
	return func(c *config) error { c.source = src; return nil }
}

// WithReconcileInterval sets how often a manager whose item source is a
// [lease.Watcher] lists every row to reconcile its view of the catalog
// with the store (default 30s or half the TTL, whichever is shorter). The
// feed keeps the view current between listings and a Reset makes the next
// scan list at once; the periodic listing is the safety net for a change
// a feed lost without saying so. Renewals are not in the feed, so the
// view's expiry of another node's lease is the one the last listing (or
// grant) showed: holders renew every third of the TTL, so a listing at
// most half a TTL old shows every live lease unexpired, and a lease the
// view shows lapsed (by more than the safety margin) has lapsed unless its
// holder renewed late. A bid on such an item that the store refuses as
// leased reads the row again. A longer interval costs fewer reads and
// more such refused bids. When the feed also reports lapses
// ([lease.LapseReporter], as lease/etcd's does), the view takes a lease
// for live until the feed says it lapsed, and the default is 30s or half
// the TTL, whichever is longer.
func WithReconcileInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("reconcile interval %v", d)
		}
		c.reconcile = d
		return nil
	}
}

// WithTTL tells the manager the store's lease TTL (default 30s, the
// stores' default): the default renewal interval is a third of it, and
// shutdown gives each release up to the drain timeout plus the TTL. It
// does not change the store's TTL, which the store's own options set.
func WithTTL(d time.Duration) Option {
	return func(c *config) error { c.leaseOpts = append(c.leaseOpts, lease.WithTTL(d)); return nil }
}

// WithClock sets the clock by which the manager keeps its leases' local
// deadlines, backoffs and touch times (default [lease.SystemClock]).
func WithClock(clk lease.Clock) Option {
	return func(c *config) error { c.leaseOpts = append(c.leaseOpts, lease.WithClock(clk)); return nil }
}

// WithSafetyMargin sets how long before expiry, by the manager's clock,
// each of its leases counts itself lost (default a tenth of the TTL; see
// [lease.Lease]). It must be below the TTL; 0 is the default.
func WithSafetyMargin(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("safety margin %v", d)
		}
		c.margin = d
		return nil
	}
}

// WithReplication makes the manager treat the replica slots of an item
// (see [lease.ReplicaID]) as one item for placement: it never bids on, or
// holds, two slots of the same item, since a replica on the primary's
// node is worthless. Each slot is otherwise an item like any other: the
// manager bids on it, wins it, indexes it proactively and serves it.
// [Indexer] calls get the slot's ID (Row.ID, Drop's item); map it to the
// item with [lease.SplitReplicaID]. Off by default: without it, IDs are
// not interpreted.
func WithReplication() Option {
	return func(c *config) error { c.replication = true; return nil }
}

// WithHooks sets the manager's hooks, those of its leases included
// ([Hooks].Lease).
func WithHooks(h Hooks) Option {
	return func(c *config) error { c.hooks = h; return nil }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { c.log = l; return nil }
}

// WithSaturationRounds sets how many scans in a row must claim none of
// the unclaimed items, while an item that fits the node's budget does not
// fit its free memory, before [Signals].Saturated counts such items
// (default 20). Choose it so that the rounds outlast an auction window:
// with the defaults, 20 scans of 1s.
func WithSaturationRounds(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("saturation rounds %d", n)
		}
		c.saturation = n
		return nil
	}
}

// WithAutoscaler makes the manager ask a after each scan for a
// [Decision] and pass each one other than Steady to [Hooks].Scale (and
// log it). Without it, no decision is made; [Hooks].Scanned still gets
// the signals.
func WithAutoscaler(a Autoscaler) Option {
	return func(c *config) error {
		if a == nil {
			return invalid("nil autoscaler")
		}
		c.autoscaler = a
		return nil
	}
}

// WithTracer makes the manager record OpenTelemetry spans with t: one
// "agent.claim" from each bid to the close of its auction, one
// "agent.index" around each Index call (whose context carries it, so the
// Indexer's spans are its children), and one "agent.serve" for each
// [Manager.Serve]. Without it the manager records none and touches no
// global tracer provider.
func WithTracer(t trace.Tracer) Option {
	return func(c *config) error {
		if t == nil {
			return invalid("nil tracer")
		}
		c.tracer = t
		return nil
	}
}
