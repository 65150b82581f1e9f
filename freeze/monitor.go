package freeze

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Monitor measures the disk usage of the directories a node writes, once per
// filesystem, and reports the highest. Its zero value is not usable; make
// one with [NewMonitor]. Its methods are safe for concurrent use.
type Monitor struct {
	dirs    []string
	cfg     monitorConfig
	log     *slog.Logger
	running atomic.Bool

	mu        sync.Mutex
	usage     float64 // last measurement, −1 before the first or after an error
	lastLevel level
	lastQuiet time.Time // last INFO "disk usage ok" (or frozen/disabled log)
}

type level int

const (
	levelNone level = iota // nothing logged yet
	levelOK
	levelAlert
	levelCritical
	levelError
)

// NewMonitor returns a monitor of dirs (at least one; duplicates are
// ignored). It reads nothing until the first check: the directories need
// not exist yet.
func NewMonitor(dirs []string, opts ...MonitorOption) (*Monitor, error) {
	cfg, err := newMonitorConfig(opts)
	if err != nil {
		return nil, err
	}
	var ds []string
	for _, d := range dirs {
		if d == "" {
			return nil, fmt.Errorf("%w: empty directory", ErrInvalidOption)
		}
		if !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil, fmt.Errorf("%w: no directory to monitor", ErrInvalidOption)
	}
	return &Monitor{dirs: ds, cfg: *cfg, log: cfg.logger, usage: -1}, nil
}

// FreezeAt returns the freeze limit in percent, or −1 when freezing is
// disabled.
func (m *Monitor) FreezeAt() float64 { return m.cfg.freezeAt }

// Enabled reports whether freezing is enabled.
func (m *Monitor) Enabled() bool { return m.cfg.freezeAt >= 0 }

// Usage returns the usage in percent of the fullest monitored filesystem
// at the last check, or −1 before the first check and after a failed one
// (the reference's /status figure).
func (m *Monitor) Usage() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// Check measures the usage now, logs it as Run does, and returns it. On
// error the usage is −1 and the error wraps [ErrDiskUsage].
func (m *Monitor) Check(ctx context.Context) (float64, error) {
	return m.check(ctx, false)
}

// Run checks the usage on the schedule of [WithPollIntervals] until ctx is
// done, then returns nil. It only measures and logs; a [Freezer]'s Run
// also freezes. Only one Run (of the Monitor or of a Freezer using it) may
// run at a time; another returns [ErrRunTwice].
func (m *Monitor) Run(ctx context.Context) error {
	return m.run(ctx, func() bool { return false }, func(ctx context.Context, usage float64, err error) time.Duration {
		return m.interval(usage, err, false)
	})
}

// run checks until ctx is done, quietly while quiet reports true, and calls
// step after each check; step returns the time until the next check.
func (m *Monitor) run(ctx context.Context, quiet func() bool, step func(ctx context.Context, usage float64, err error) time.Duration) error {
	if !m.running.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	defer m.running.Store(false)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		usage, err := m.check(ctx, quiet())
		if ctx.Err() != nil {
			return nil
		}
		timer.Reset(step(ctx, usage, err))
	}
}

// interval is the time until the next check after one that measured usage
// (or failed with err). quiet is set while frozen.
func (m *Monitor) interval(usage float64, err error, quiet bool) time.Duration {
	c := &m.cfg
	switch {
	case err != nil:
		return c.retryInterval
	case quiet || c.freezeAt < 0:
		return min(DefaultFrozenInterval, c.maxInterval)
	case usage >= c.freezeAt:
		return c.minInterval
	}
	d := time.Duration(float64(c.maxInterval) * (c.freezeAt - usage) / 100)
	return max(c.minInterval, min(d, c.maxInterval))
}

// measure reads the usage of each monitored filesystem once and returns
// the highest, with the directory it was read through.
func (m *Monitor) measure() (float64, string, error) {
	devr, _ := m.cfg.reader.(DeviceReader)
	seen := make(map[uint64]bool, len(m.dirs))
	var errs []error
	best, fullest := -1.0, ""
	for _, dir := range m.dirs {
		var dev uint64
		var err error
		if devr != nil {
			dev, err = devr.Device(dir)
		} else {
			var fi os.FileInfo
			if fi, err = os.Stat(dir); err == nil {
				dev, err = statDevice(fi)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: device of %s: %w", ErrDiskUsage, dir, err))
			continue
		}
		if seen[dev] {
			continue
		}
		seen[dev] = true
		used, total, err := m.cfg.reader.Usage(dir)
		if err == nil && total == 0 {
			err = errors.New("total size is 0")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrDiskUsage, dir, err))
			continue
		}
		if p := 100 * float64(used) / float64(total); p > best {
			best, fullest = p, dir
		}
	}
	if len(errs) > 0 {
		return -1, "", errors.Join(errs...)
	}
	return best, fullest, nil
}

// check measures, records and logs the usage. quiet (set while frozen)
// throttles every usage log to one per DefaultQuietLogInterval.
func (m *Monitor) check(ctx context.Context, quiet bool) (float64, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	usage, dir, err := m.measure()
	m.mu.Lock()
	m.usage = usage
	m.logLocked(usage, dir, err, quiet)
	m.mu.Unlock()
	if m.cfg.onCheck != nil {
		m.cfg.onCheck(usage, err)
	}
	return usage, err
}

func (m *Monitor) logLocked(usage float64, dir string, err error, quiet bool) {
	now := time.Now()
	c := &m.cfg
	if err != nil {
		m.lastLevel = levelError
		m.log.Warn("disk usage check failed", "err", err, "retry_in", c.retryInterval)
		return
	}
	attrs := []any{"usage", round2(usage), "freeze_at", c.freezeAt, "dir", dir}
	lv := levelOK
	switch {
	case c.freezeAt < 0:
	case usage >= c.freezeAt-DefaultCriticalPoints:
		lv = levelCritical
	case usage >= c.freezeAt-DefaultAlertPoints:
		lv = levelAlert
	}
	if quiet || c.freezeAt < 0 {
		// Frozen or disabled: no alerts, one line now and then.
		if m.lastLevel == levelNone || now.Sub(m.lastQuiet) >= DefaultQuietLogInterval {
			m.lastQuiet = now
			m.log.Info("disk usage", append(attrs, "frozen", quiet)...)
		}
		m.lastLevel = lv
		return
	}
	switch lv {
	case levelCritical:
		m.log.Error("disk usage critical", attrs...)
	case levelAlert:
		m.log.Warn("disk usage alert", attrs...)
	default:
		if m.lastLevel != levelOK || now.Sub(m.lastQuiet) >= DefaultQuietLogInterval {
			m.lastQuiet = now
			m.log.Info("disk usage ok", attrs...)
		}
	}
	m.lastLevel = lv
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
