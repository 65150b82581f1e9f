package ingest

import (
	"fmt"
	"log/slog"
	"time"
)

// WalkerOption configures a [Walker] made alone by [NewWalker]. A Walker
// that an [Ingester] makes has the settings of the Ingester's [Option]s
// instead (WithLogger, WithHooks, WithUnsignedAds, WithDepthLimits,
// WithRequestTimeout, WithRequestRate, WithCheckpoint, WithFrozen,
// WithSpillLimits), which mean the same as the WalkerOptions of the same
// name.
type WalkerOption func(*walkerConfig) error

// walkerConfig is what a Walker reads: the options of [NewWalker], and the
// part of an Ingester's config it hands to its walkers.
type walkerConfig struct {
	logger             *slog.Logger
	hooks              Hooks
	allowUnsigned      bool
	adDepth            int
	requestTimeout     time.Duration
	rate               float64 // 0: no limit
	burst              int
	checkpointEvery    int
	checkpointInterval time.Duration
	frozen             func() bool
	spillWalk          int64
	spillFirst         int64
	unordered          bool
}

// defaultWalkerConfig is the one place the walker's defaults are set, for
// a Walker alone and for an Ingester's.
func defaultWalkerConfig() walkerConfig {
	return walkerConfig{
		logger:             slog.New(slog.DiscardHandler),
		adDepth:            DefaultAdDepthLimit,
		requestTimeout:     DefaultRequestTimeout,
		checkpointEvery:    DefaultCheckpointEvery,
		checkpointInterval: DefaultCheckpointInterval,
		spillWalk:          DefaultSpillLimit,
		spillFirst:         DefaultFirstSpillLimit,
	}
}

func newWalkerConfig(opts []WalkerOption) (*walkerConfig, error) {
	c := defaultWalkerConfig()
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// The setters below validate the settings that an [Option] and a
// [WalkerOption] share, so that both refuse the same values.

func (c *walkerConfig) setLogger(l *slog.Logger) error {
	if l == nil {
		return fmt.Errorf("%w: nil logger", ErrInvalidOption)
	}
	c.logger = l
	return nil
}

func (c *walkerConfig) setRequestTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: request timeout %v must be positive", ErrInvalidOption, d)
	}
	c.requestTimeout = d
	return nil
}

func (c *walkerConfig) setRequestRate(perSecond float64, burst int) error {
	if perSecond < 0 || perSecond > 0 && burst < 1 {
		return fmt.Errorf("%w: request rate %v/s with burst %d", ErrInvalidOption, perSecond, burst)
	}
	c.rate, c.burst = perSecond, burst
	return nil
}

func (c *walkerConfig) setCheckpoint(ads int, interval time.Duration) error {
	if ads < 1 || interval <= 0 {
		return fmt.Errorf("%w: checkpoint every %d ads or %v", ErrInvalidOption, ads, interval)
	}
	c.checkpointEvery, c.checkpointInterval = ads, interval
	return nil
}

func (c *walkerConfig) setFrozen(frozen func() bool) error {
	if frozen == nil {
		return fmt.Errorf("%w: nil frozen func", ErrInvalidOption)
	}
	c.frozen = frozen
	return nil
}

func (c *walkerConfig) setSpillLimits(walk, first int64) error {
	if walk < 1 || first < 1 {
		return fmt.Errorf("%w: spill limits %d, %d must be positive", ErrInvalidOption, walk, first)
	}
	c.spillWalk, c.spillFirst = walk, first
	return nil
}

// WithWalkerLogger sends the Walker's progress and failures to l (keys
// publisher, provider, cid). The default discards them.
func WithWalkerLogger(l *slog.Logger) WalkerOption {
	return func(c *walkerConfig) error { return c.setLogger(l) }
}

// WithWalkerHooks installs metric hooks. A Walker calls WalkDone, AdWalked
// and AdApplied; the other [Hooks] concern an [Ingester] and are not
// called.
func WithWalkerHooks(h Hooks) WalkerOption {
	return func(c *walkerConfig) error { c.hooks = h; return nil }
}

// WithWalkerUnsignedAds makes unsigned advertisements acceptable, as
// [WithUnsignedAds] does for an Ingester.
func WithWalkerUnsignedAds() WalkerOption {
	return func(c *walkerConfig) error { c.allowUnsigned = true; return nil }
}

// WithWalkerDepthLimit sets the most advertisements one walk collects
// (default [DefaultAdDepthLimit]); beyond it the walk fails with
// [ErrDepthLimit]. Entry chains are the [Applier]'s to bound.
func WithWalkerDepthLimit(ads int) WalkerOption {
	return func(c *walkerConfig) error {
		if ads < 1 {
			return fmt.Errorf("%w: depth limit %d must be positive", ErrInvalidOption, ads)
		}
		c.adDepth = ads
		return nil
	}
}

// WithWalkerRequestTimeout bounds every Head and Block request of a walk
// (default [DefaultRequestTimeout]), as [WithRequestTimeout] does.
func WithWalkerRequestTimeout(d time.Duration) WalkerOption {
	return func(c *walkerConfig) error { return c.setRequestTimeout(d) }
}

// WithWalkerRequestRate limits the requests of a walk to perSecond on
// average, with bursts of up to burst, as [WithRequestRate] does. The
// default is no limit.
func WithWalkerRequestRate(perSecond float64, burst int) WalkerOption {
	return func(c *walkerConfig) error { return c.setRequestRate(perSecond, burst) }
}

// WithWalkerCheckpoint sets how often applying advertisements
// checkpoints, as [WithCheckpoint] does (defaults [DefaultCheckpointEvery],
// [DefaultCheckpointInterval]).
func WithWalkerCheckpoint(ads int, interval time.Duration) WalkerOption {
	return func(c *walkerConfig) error { return c.setCheckpoint(ads, interval) }
}

// WithWalkerFrozen makes frozen report whether the node is frozen, as
// [WithFrozen] does: the Walker marks the advertisements it hands over
// while frozen ([Ad].Frozen) and [Walker.Reset] forgets them.
func WithWalkerFrozen(frozen func() bool) WalkerOption {
	return func(c *walkerConfig) error { return c.setFrozen(frozen) }
}

// WithWalkerSpillLimits bounds the bytes of advertisement blocks one walk
// holds between collecting and applying them, as [WithSpillLimits] does
// (defaults [DefaultSpillLimit], [DefaultFirstSpillLimit]).
func WithWalkerSpillLimits(walk, first int64) WalkerOption {
	return func(c *walkerConfig) error { return c.setSpillLimits(walk, first) }
}

// WithWalkerUnordered makes the Walker apply each advertisement as it is
// fetched, newest first, as [WithUnordered] does for an Ingester.
func WithWalkerUnordered() WalkerOption {
	return func(c *walkerConfig) error { c.unordered = true; return nil }
}
