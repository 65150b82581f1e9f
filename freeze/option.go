package freeze

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults. The freeze limit is the design's 90%, not the reference's 95%
// (config) or 99% (its package fallback); the schedule is the reference's.
const (
	// DefaultFreezeAtPercent is the disk usage at which the node freezes.
	DefaultFreezeAtPercent = 90.0
	// DefaultAlertPoints and DefaultCriticalPoints are how many
	// percentage points below the limit the WARN "disk usage alert" and
	// the ERROR "disk usage critical" logs start.
	DefaultAlertPoints    = 10.0
	DefaultCriticalPoints = 2.0
	// DefaultMinInterval and DefaultMaxInterval bound the time between two
	// checks; see [WithPollIntervals].
	DefaultMinInterval = 30 * time.Second
	DefaultMaxInterval = time.Hour
	// DefaultRetryInterval is the time before the next check after a check
	// (or a freeze) failed.
	DefaultRetryInterval = 30 * time.Second
	// DefaultFrozenInterval is the time between two checks once frozen,
	// and while freezing is disabled (capped by the max interval): usage
	// is still measured for [Monitor.Usage], and logs are throttled.
	DefaultFrozenInterval = 5 * time.Minute
	// DefaultQuietLogInterval is the least time between two INFO "disk
	// usage ok" logs, and between two usage logs while frozen.
	DefaultQuietLogInterval = time.Hour
)

// MonitorOption configures a [Monitor] ([NewMonitor]).
type MonitorOption func(*monitorConfig) error

type monitorConfig struct {
	freezeAt      float64 // < 0: disabled
	reader        DiskReader
	minInterval   time.Duration
	maxInterval   time.Duration
	retryInterval time.Duration
	logger        *slog.Logger
	onCheck       func(usage float64, err error)
}

func newMonitorConfig(opts []MonitorOption) (*monitorConfig, error) {
	c := &monitorConfig{
		freezeAt:      DefaultFreezeAtPercent,
		reader:        StatfsReader{},
		minInterval:   DefaultMinInterval,
		maxInterval:   DefaultMaxInterval,
		retryInterval: DefaultRetryInterval,
		logger:        slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.maxInterval < c.minInterval {
		return nil, fmt.Errorf("%w: max interval %v below min interval %v", ErrInvalidOption, c.maxInterval, c.minInterval)
	}
	return c, nil
}

// WithFreezeAtPercent sets the disk usage, in percent of the fullest
// monitored filesystem, at which the node freezes. 0 means the default
// ([DefaultFreezeAtPercent], 90); a negative value disables freezing (usage
// is still measured and logged, [Freezer.Freeze] returns [ErrDisabled]);
// above 100 or NaN is an error.
func WithFreezeAtPercent(p float64) MonitorOption {
	return func(c *monitorConfig) error {
		switch {
		case math.IsNaN(p) || p > 100:
			return fmt.Errorf("%w: freeze-at percent %v: want at most 100", ErrInvalidOption, p)
		case p == 0:
			c.freezeAt = DefaultFreezeAtPercent
		case p < 0:
			c.freezeAt = -1
		default:
			c.freezeAt = p
		}
		return nil
	}
}

// WithDiskReader replaces the default [StatfsReader].
func WithDiskReader(r DiskReader) MonitorOption {
	return func(c *monitorConfig) error {
		if r == nil {
			return fmt.Errorf("%w: nil disk reader", ErrInvalidOption)
		}
		c.reader = r
		return nil
	}
}

// WithPollIntervals bounds the time between two checks. The next check is
// due after
//
//	max × (freezeAt − usage) / 100, and at least min
//
// so with the defaults (30s, 1h) and a 90% limit a disk at 50% is checked
// every 24 minutes, at 80% every 6 minutes, at 89% every 36 seconds, at or
// above the limit every 30 seconds: the reference's schedule, whose 1 hour
// factor is max here.
func WithPollIntervals(minInterval, maxInterval time.Duration) MonitorOption {
	return func(c *monitorConfig) error {
		if minInterval <= 0 || maxInterval <= 0 {
			return fmt.Errorf("%w: poll intervals %v, %v must be positive", ErrInvalidOption, minInterval, maxInterval)
		}
		c.minInterval, c.maxInterval = minInterval, maxInterval
		return nil
	}
}

// WithRetryInterval sets the time before the next check after a failed
// check or freeze (default [DefaultRetryInterval]).
func WithRetryInterval(d time.Duration) MonitorOption {
	return func(c *monitorConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: retry interval %v must be positive", ErrInvalidOption, d)
		}
		c.retryInterval = d
		return nil
	}
}

// WithLogger sends the usage logs, and the [Freezer]'s, to l. The default
// discards them.
func WithLogger(l *slog.Logger) MonitorOption {
	return func(c *monitorConfig) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithOnCheck calls fn after every check with the usage (−1 with a non-nil
// error). For metrics; fn must not block.
func WithOnCheck(fn func(usage float64, err error)) MonitorOption {
	return func(c *monitorConfig) error { c.onCheck = fn; return nil }
}

// Option configures a [Freezer] ([Open]).
type Option func(*freezerConfig) error

type freezerConfig struct {
	onFreeze        func(ctx context.Context, at time.Time) error
	onUnfreeze      func(ctx context.Context, frozenAt time.Time) error
	onStateChange   func(s State, at time.Time)
	unfreezeOnStart bool
}

func newFreezerConfig(opts []Option) (*freezerConfig, error) {
	c := &freezerConfig{}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithOnFreeze sets the snapshot callback run when the node freezes, with
// the time of the freeze. An indexer sets every provider's FrozenAt to its
// last advertisement and FrozenAtTime to at. It runs after the freeze
// intent is persisted and may run again for the same at (after a crash or
// a failure), so it must be idempotent: a provider that already has a
// FrozenAt keeps it. An error leaves the node [Freezing]; Run retries.
func WithOnFreeze(fn func(ctx context.Context, at time.Time) error) Option {
	return func(c *freezerConfig) error { c.onFreeze = fn; return nil }
}

// WithOnUnfreeze sets the callback run by an unfreeze on start, with the
// time the node froze. An indexer resets each publisher's walker to its
// providers' FrozenAt (so the advertisements walked while frozen are
// ingested again, with their entries) and clears FrozenAt. It may run again
// after a crash, so it must be idempotent.
func WithOnUnfreeze(fn func(ctx context.Context, frozenAt time.Time) error) Option {
	return func(c *freezerConfig) error { c.onUnfreeze = fn; return nil }
}

// WithOnStateChange calls fn after every change of [State], with the time
// of the freeze (zero once unfrozen). For metrics and logs; fn must not
// block or call the Freezer's Freeze or Check.
func WithOnStateChange(fn func(s State, at time.Time)) Option {
	return func(c *freezerConfig) error { c.onStateChange = fn; return nil }
}

// WithUnfreezeOnStart makes [Open] unfreeze a frozen node, when usage is
// below the limit or freezing is disabled.
func WithUnfreezeOnStart(on bool) Option {
	return func(c *freezerConfig) error { c.unfreezeOnStart = on; return nil }
}
