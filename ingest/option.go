package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Defaults, as the reference indexer (storetheindex) has them where it has
// one.
const (
	// DefaultAdDepthLimit is the most advertisements one walk collects
	// (the reference AdvertisementDepthLimit).
	DefaultAdDepthLimit = 33_554_432
	// DefaultEntriesDepthLimit is the most entry chunks one
	// advertisement's chain may have, or nodes its HAMT may have (the
	// reference EntriesDepthLimit).
	DefaultEntriesDepthLimit = 65_536
	// DefaultWorkers is how many publishers are walked at once (the
	// reference IngestWorkerCount).
	DefaultWorkers = 10
	// DefaultRequestTimeout bounds each Head and Block request (the
	// reference HttpSyncTimeout).
	DefaultRequestTimeout = 10 * time.Second
	// DefaultBatchSize is the most multihashes put into the store at
	// once. An advertisement with at most this many entries is indexed by
	// one Put, after every one of its chunks has been fetched and
	// verified.
	DefaultBatchSize = 65_536
	// DefaultCheckpointEvery is the most advertisements applied between
	// two checkpoints (store Flush, then the walk position persisted).
	DefaultCheckpointEvery = 64
	// DefaultCheckpointInterval is the longest time between two
	// checkpoints while advertisements are being applied.
	DefaultCheckpointInterval = time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the wait before a
	// publisher whose walk failed is walked again; the wait doubles with
	// each consecutive failure.
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = 5 * time.Minute
	// DefaultSpillLimit and DefaultFirstSpillLimit bound the bytes of
	// advertisement blocks a walk holds in the datastore between
	// collecting and applying them: of a publisher with a finished walk,
	// and of one whose first walk this is (about a million typical
	// advertisements).
	DefaultSpillLimit      = 16 << 30
	DefaultFirstSpillLimit = 1 << 30
	// DefaultSlotTime and DefaultSlotAds bound one walk's turn on a
	// worker: then it is persisted where it is and the publisher goes to
	// the back of the queue, so that a long or slow chain cannot keep
	// other publishers waiting.
	DefaultSlotTime = 30 * time.Second
	DefaultSlotAds  = 100_000
	// DefaultMinTransferRate is the least a publisher must send, in bytes
	// per second of waiting on it, once DefaultMinRateGrace of waiting has
	// passed in a slot. A typical advertisement of about 1 KB fetched
	// across the world in 300 ms is above 3,000 bytes/s.
	DefaultMinTransferRate = 512
	DefaultMinRateGrace    = 10 * time.Second
	// DefaultUnverifiedLimit is the most publishers that never verified
	// the Ingester holds at once; DefaultUnverifiedTTL is how long one
	// waits for its walk, or is held after it failed to verify, before it
	// is forgotten. One that failed makes room for a new one at once.
	DefaultUnverifiedLimit = 1024
	DefaultUnverifiedTTL   = 10 * time.Minute
	// DefaultHeadCheckTimeout bounds the fetch of a signed head from
	// announced addresses not verified yet: connecting, asking and the
	// whole answer (a few hundred bytes). Anyone can announce addresses
	// that accept connections and never answer.
	DefaultHeadCheckTimeout = 4 * time.Second
	// DefaultCheckWorkers is how many head checks of publishers that
	// never verified run at once. A check only waits on the network.
	DefaultCheckWorkers = 32
)

// Option configures an [Ingester] ([New]). The settings a [Walker] has too
// (logger, hooks, unsigned ads, depth, request timeout and rate,
// checkpoints, frozen, spill limits) reach every Walker the Ingester makes;
// a Walker made alone with [NewWalker] takes [WalkerOption]s.
type Option func(*config) error

// config is what the options of [New] set: the walkers' settings, which
// the Ingester hands to every Walker it makes, and its own.
type config struct {
	walkerConfig

	entriesDepth     int
	workers          int
	backoffMin       time.Duration
	backoffMax       time.Duration
	policy           Policy
	batchSize        int
	applier          func(publisher peer.ID) Applier
	slotTime         time.Duration
	slotAds          int
	minRate          float64
	minRateGrace     time.Duration
	reserved         int // -1: half the workers
	maxUnverified    int
	unverifiedTTL    time.Duration
	headCheckTimeout time.Duration
	checkWorkers     int
	pacer            Pacer
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		walkerConfig:     defaultWalkerConfig(),
		entriesDepth:     DefaultEntriesDepthLimit,
		workers:          DefaultWorkers,
		backoffMin:       DefaultBackoffMin,
		backoffMax:       DefaultBackoffMax,
		batchSize:        DefaultBatchSize,
		slotTime:         DefaultSlotTime,
		slotAds:          DefaultSlotAds,
		minRate:          DefaultMinTransferRate,
		minRateGrace:     DefaultMinRateGrace,
		reserved:         -1,
		maxUnverified:    DefaultUnverifiedLimit,
		unverifiedTTL:    DefaultUnverifiedTTL,
		headCheckTimeout: DefaultHeadCheckTimeout,
		checkWorkers:     DefaultCheckWorkers,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.unordered && c.applier == nil {
		return nil, fmt.Errorf("%w: unordered walks need an applier (WithApplier): a store needs ordered ones", ErrInvalidOption)
	}
	switch {
	case c.reserved < 0:
		c.reserved = c.workers / 2
	case c.reserved >= c.workers:
		return nil, fmt.Errorf("%w: %d reserved workers of %d leave none for new publishers", ErrInvalidOption, c.reserved, c.workers)
	}
	return c, nil
}

// WithLogger sends progress and failures to l (keys publisher, provider,
// cid). The default discards them.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error { return c.setLogger(l) }
}

// WithApplier makes an [Ingester] hand the advertisements of each publisher
// to the [Applier] newApplier returns for it (called once per walk) instead
// of putting them into a store: the Ingester then schedules, limits,
// retries and persists walks as usual for a consumer that is not a
// [store.Store], such as a piece sampler. The store given to [New] may be
// nil; when it is not, it is still not written. The Applier fetches entries
// with [Ingester.Entries]. Hooks other than EntriesIndexed are called as
// usual.
func WithApplier(newApplier func(publisher peer.ID) Applier) Option {
	return func(c *config) error {
		if newApplier == nil {
			return fmt.Errorf("%w: nil applier func", ErrInvalidOption)
		}
		c.applier = newApplier
		return nil
	}
}

// WithUnordered makes the Ingester's walks apply each advertisement as it
// is fetched, newest first, instead of collecting the chain down to the
// last head and applying it oldest first: for an [Applier] to which order
// does not matter (the piece sampler: pieces are immutable and it ignores
// removals), whose first results then show while the rest of a long chain
// is still being fetched, and which holds nothing collected on disk. It
// is refused without [WithApplier]: an indexer's store needs the order
// IPNI prescribes. See the package documentation (Unordered walks).
func WithUnordered() Option {
	return func(c *config) error { c.unordered = true; return nil }
}

// WithHooks installs metric hooks; see [Hooks].
func WithHooks(h Hooks) Option {
	return func(c *config) error { c.hooks = h; return nil }
}

// WithUnsignedAds makes unsigned advertisements acceptable. Meant for tests
// and trusted private publishers: a signature that is present must still be
// valid and made by the provider or the publisher.
func WithUnsignedAds() Option {
	return func(c *config) error { c.allowUnsigned = true; return nil }
}

// WithDepthLimits sets the most advertisements one walk collects (default
// [DefaultAdDepthLimit]) and the most chunks of one entry chain, or nodes
// of one HAMT of entries, root included (default
// [DefaultEntriesDepthLimit]). Beyond them the walk, or the advertisement,
// fails with [ErrDepthLimit].
func WithDepthLimits(ads, entryChunks int) Option {
	return func(c *config) error {
		if ads < 1 || entryChunks < 1 {
			return fmt.Errorf("%w: depth limits %d, %d must be positive", ErrInvalidOption, ads, entryChunks)
		}
		c.adDepth, c.entriesDepth = ads, entryChunks
		return nil
	}
}

// WithWorkers sets how many publishers are walked at once (default
// [DefaultWorkers]).
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: workers %d must be positive", ErrInvalidOption, n)
		}
		c.workers = n
		return nil
	}
}

// WithRequestTimeout bounds every Head and Block request to a publisher
// (default [DefaultRequestTimeout]). A request that takes longer fails with
// [ErrFetch] wrapping context.DeadlineExceeded.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) error { return c.setRequestTimeout(d) }
}

// WithRequestRate limits the requests sent to each publisher to perSecond
// on average, with bursts of up to burst. The default is no limit, as is a
// perSecond of 0 (whatever burst is).
func WithRequestRate(perSecond float64, burst int) Option {
	return func(c *config) error { return c.setRequestRate(perSecond, burst) }
}

// WithBackoff sets the wait before a publisher whose walk failed is walked
// again: min after the first failure, doubling up to max (defaults
// [DefaultBackoffMin], [DefaultBackoffMax]). A new announce does not cut
// the wait short.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min {
			return fmt.Errorf("%w: backoff %v to %v", ErrInvalidOption, min, max)
		}
		c.backoffMin, c.backoffMax = min, max
		return nil
	}
}

// WithPolicy sets which publishers are ingested (default: all). See also
// [Ingester.SetPolicy].
func WithPolicy(p Policy) Option {
	return func(c *config) error { c.policy = p.clone(); return nil }
}

// WithBatchSize sets the most multihashes put into the store by one call
// (default [DefaultBatchSize]).
func WithBatchSize(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: batch size %d must be positive", ErrInvalidOption, n)
		}
		c.batchSize = n
		return nil
	}
}

// WithCheckpoint sets how often applying advertisements checkpoints: after
// every ads advertisements or every interval, whichever comes first
// (defaults [DefaultCheckpointEvery], [DefaultCheckpointInterval]). A
// checkpoint flushes the store and then persists the walk position, so a
// process killed between two checkpoints applies the advertisements since
// the last one again when it restarts. WithCheckpoint(1, ...) checkpoints
// after every advertisement, at the price of a store flush each.
func WithCheckpoint(ads int, interval time.Duration) Option {
	return func(c *config) error { return c.setCheckpoint(ads, interval) }
}

// WithFrozen makes frozen report whether the node is frozen (typically a
// freeze.Freezer's Frozen method). It is consulted once per advertisement,
// before it is applied: while frozen, an advertisement with entries is
// applied as a metadata update of its context (as one with NoEntries), its
// entries are neither fetched nor stored; removals, metadata updates and
// provider records are applied as usual. Such advertisements are marked,
// and [Walker.Reset] forgets them, so that after an unfreeze a walk from
// the head back to the frozen point applies them again with their
// entries. The default is never frozen.
func WithFrozen(frozen func() bool) Option {
	return func(c *config) error { return c.setFrozen(frozen) }
}

// WithSpillLimits bounds the bytes of advertisement blocks one walk holds
// in the datastore between collecting and applying them: walk for a
// publisher with a finished walk (default [DefaultSpillLimit]), first for
// one whose first walk it is (default [DefaultFirstSpillLimit]). A walk
// over its limit is abandoned with [ErrSpillLimit].
func WithSpillLimits(walk, first int64) Option {
	return func(c *config) error { return c.setSpillLimits(walk, first) }
}

// WithSlot bounds one walk's turn on a worker of [Ingester.Run] to d and
// to ads advertisements collected or applied (defaults [DefaultSlotTime],
// [DefaultSlotAds]); then the walk is persisted where it is and the
// publisher queued again behind the others. [Ingester.Sync] and
// [Walker.Walk] have no slot.
func WithSlot(d time.Duration, ads int) Option {
	return func(c *config) error {
		if d <= 0 || ads < 1 {
			return fmt.Errorf("%w: slot %v, %d advertisements", ErrInvalidOption, d, ads)
		}
		c.slotTime, c.slotAds = d, ads
		return nil
	}
}

// WithMinTransferRate sets the least a publisher must send in a slot of
// [Ingester.Run], in bytes per second spent waiting on it, once grace of
// waiting has passed (defaults [DefaultMinTransferRate],
// [DefaultMinRateGrace]); a slower publisher's walk stops with
// [ErrTooSlow] and backs off. 0 bytes per second disables the check.
func WithMinTransferRate(bytesPerSecond float64, grace time.Duration) Option {
	return func(c *config) error {
		if bytesPerSecond < 0 || grace <= 0 {
			return fmt.Errorf("%w: minimum transfer rate %v bytes/s after %v", ErrInvalidOption, bytesPerSecond, grace)
		}
		c.minRate, c.minRateGrace = bytesPerSecond, grace
		return nil
	}
}

// WithReservedWorkers keeps n of the workers for publishers that have
// finished a walk before, so that a flood of new publishers (announced by
// anyone) cannot hold every worker. The default is half the workers,
// rounded down; n must leave at least one worker for new publishers.
func WithReservedWorkers(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: reserved workers %d must not be negative", ErrInvalidOption, n)
		}
		c.reserved = n
		return nil
	}
}

// WithUnverifiedLimit bounds the publishers that never verified (announced,
// their signed head not fetched and verified yet): at most n are held at
// once (default [DefaultUnverifiedLimit]), each for at most ttl waiting for
// its walk or after its head failed to verify (default
// [DefaultUnverifiedTTL]); one that failed makes room for a new one.
// Announces of new publishers while n wait for their walk fail with
// [ErrTooManyPublishers].
func WithUnverifiedLimit(n int, ttl time.Duration) Option {
	return func(c *config) error {
		if n < 1 || ttl <= 0 {
			return fmt.Errorf("%w: unverified limit %d, TTL %v", ErrInvalidOption, n, ttl)
		}
		c.maxUnverified, c.unverifiedTTL = n, ttl
		return nil
	}
}

// WithHeadCheckTimeout bounds the fetch of a publisher's signed head from
// announced addresses that have not verified yet, connection included
// (default [DefaultHeadCheckTimeout]); past it the addresses fail to
// verify. Addresses that verified before keep the request timeout
// ([WithRequestTimeout]).
func WithHeadCheckTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: head check timeout %v must be positive", ErrInvalidOption, d)
		}
		c.headCheckTimeout = d
		return nil
	}
}

// WithCheckWorkers sets how many head checks of publishers that never
// verified run at once (default [DefaultCheckWorkers]). They run apart
// from the walk workers ([WithWorkers]): a publisher's first walk starts
// once its check has verified, on a walk worker.
func WithCheckWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: check workers %d must be positive", ErrInvalidOption, n)
		}
		c.checkWorkers = n
		return nil
	}
}

// Pacer runs pieces of the Ingester's CPU work: the Ingester decodes and
// stores each entry chunk in a call of Run, so that a pacer can hold
// ingest back and run it below lookups while the node answers them
// (ingest/pace's Pacer is one). Run returns fn's error, or ctx's if ctx
// ends before fn starts; once started, fn runs to its end.
//
// A Pacer that also has a method Background() has it called at the start
// of each walk, on the goroutine that walks and ends with the walk: the
// pacer may lock that goroutine to its thread and lower the thread's
// scheduling priority, so that the walk (fetching, decoding, storing,
// and the sorted runs it applies) yields the CPU to lookups.
type Pacer interface {
	Run(ctx context.Context, fn func() error) error
}

// backgrounder is a Pacer that runs walks below other work.
type backgrounder interface{ Background() }

// WithPacer makes the Ingester decode and store each entry chunk through
// p (see [Pacer]); by default it runs them itself.
func WithPacer(p Pacer) Option {
	return func(c *config) error {
		c.pacer = p
		return nil
	}
}
