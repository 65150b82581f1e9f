package freeze_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/freeze"
)

// The time between checks shrinks as usage nears the limit:
// 1h × (freezeAt − usage)/100, at least 30s (the defaults).
func TestPollScheduleShrinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		usages := []float64{10, 50, 80, 88, 89.9, 95, 95}
		var i atomic.Int32
		disk := newFakeDisk()
		disk.set("/data", 1, 0)
		disk.next = func() float64 { return usages[min(int(i.Add(1))-1, len(usages)-1)] }
		mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data"}, freeze.WithDiskReader(disk)))
		stop := run(t, mon)
		time.Sleep(3 * time.Hour)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{
			48 * time.Minute, // 10%: 1h × 80/100
			24 * time.Minute, // 50%
			6 * time.Minute,  // 80%
			72 * time.Second, // 88%
			30 * time.Second, // 89.9%: 3.6s, raised to the minimum
			30 * time.Second, // 95%: at or above the limit
		}
		calls := disk.callTimes()
		if len(calls) < len(want)+1 {
			t.Fatalf("%d checks, want at least %d", len(calls), len(want)+1)
		}
		for k, w := range want {
			if got := calls[k+1].Sub(calls[k]); got != w {
				t.Errorf("after usage %v%%: next check in %v, want %v", usages[k], got, w)
			}
		}
		if got := mon.Usage(); got != 95 {
			t.Errorf("Usage = %v, want 95", got)
		}
	})
}

// Configured bounds replace the defaults.
func TestPollIntervalsConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := newFakeDisk()
		disk.set("/data", 1, 40) // 10min × 50/100 = 5min
		mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data"}, freeze.WithDiskReader(disk),
			freeze.WithPollIntervals(time.Second, 10*time.Minute)))
		stop := run(t, mon)
		time.Sleep(11 * time.Minute)
		disk.setAll(89.99) // 10min × 0.01/100 = 60ms, raised to 1s
		time.Sleep(5*time.Minute + 3*time.Second)
		_ = stop()
		c := disk.callTimes()
		if len(c) < 5 {
			t.Fatalf("%d checks", len(c))
		}
		if d := c[1].Sub(c[0]); d != 5*time.Minute {
			t.Errorf("at 40%%: %v, want 5m", d)
		}
		if d := c[len(c)-1].Sub(c[len(c)-2]); d != time.Second {
			t.Errorf("at 89.99%%: %v, want 1s", d)
		}
	})
}

// Logs: INFO ok at most once an hour, WARN alert within 10 points of the
// limit, ERROR critical within 2.
func TestUsageLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogCapture()
		disk := newFakeDisk()
		disk.set("/data", 1, 50) // a check every 24 minutes
		mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data"},
			freeze.WithDiskReader(disk), freeze.WithLogger(logger)))
		stop := run(t, mon)
		time.Sleep(3 * time.Hour) // checks at 0, 24, 48, ..., 168 minutes
		checks := len(disk.callTimes())
		if checks != 8 {
			t.Errorf("%d checks in 3h at 50%%, want 8", checks)
		}
		if n := logs.count(slog.LevelInfo, "disk usage ok"); n != 3 { // at 0, 72 and 144 minutes
			t.Errorf("%d ok logs in 3h, want 3", n)
		}
		logs.reset()

		disk.setAll(80) // within 10 points of 90: alert
		time.Sleep(25 * time.Minute)
		if n := logs.count(slog.LevelWarn, "disk usage alert"); n < 1 {
			t.Errorf("no alert at 80%%: %v", logs.records())
		}
		logs.reset()
		disk.setAll(88) // within 2 points: critical
		time.Sleep(7 * time.Minute)
		if n := logs.count(slog.LevelError, "disk usage critical"); n < 1 {
			t.Errorf("no critical log at 88%%: %v", logs.records())
		}
		if n := logs.count(slog.LevelWarn, "disk usage alert"); n > 1 {
			t.Errorf("%d alert logs after the switch to 88%%", n)
		}
		for _, r := range logs.records() {
			if r.Msg == "disk usage critical" && (r.Attrs["usage"] != 88.0 || r.Attrs["freeze_at"] != 90.0 || r.Attrs["dir"] != "/data") {
				t.Errorf("critical attrs: %v", r.Attrs)
			}
		}
		logs.reset()
		disk.setAll(20) // back to ok: logged at once, not an hour later
		time.Sleep(31 * time.Second)
		if n := logs.count(slog.LevelInfo, "disk usage ok"); n != 1 {
			t.Errorf("%d ok logs on recovery, want 1: %v", n, logs.records())
		}
		_ = stop()
	})
}

// A failed read gives −1, a WARN, and a retry after the retry interval.
func TestMonitorReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, logs := newLogCapture()
		disk := newFakeDisk()
		disk.set("/data", 1, 50)
		var hook []float64
		mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data"}, freeze.WithDiskReader(disk),
			freeze.WithLogger(logger), freeze.WithRetryInterval(10*time.Second),
			freeze.WithOnCheck(func(u float64, err error) { hook = append(hook, u) })))
		if u, err := mon.Check(context.Background()); err != nil || u != 50 {
			t.Fatalf("Check = %v, %v", u, err)
		}
		disk.setErr(errInjected)
		u, err := mon.Check(context.Background())
		if u != -1 || !errors.Is(err, freeze.ErrDiskUsage) || !errors.Is(err, errInjected) {
			t.Fatalf("Check = %v, %v; want -1, ErrDiskUsage", u, err)
		}
		if mon.Usage() != -1 {
			t.Errorf("Usage after an error = %v, want -1", mon.Usage())
		}
		if logs.count(slog.LevelWarn, "disk usage check failed") != 1 {
			t.Errorf("logs: %v", logs.records())
		}
		n := len(disk.callTimes())
		stop := run(t, mon)
		time.Sleep(35 * time.Second) // checks at 0, 10, 20, 30s
		_ = stop()
		if got := len(disk.callTimes()) - n; got != 4 {
			t.Errorf("%d checks in 35s of errors, want 4 (retry every 10s)", got)
		}
		if len(hook) != 6 || hook[0] != 50 || hook[1] != -1 {
			t.Errorf("OnCheck saw %v", hook)
		}
	})
}

// Directories on one filesystem are read once; the fullest filesystem
// gives the usage.
func TestMonitorDevices(t *testing.T) {
	disk := newFakeDisk()
	disk.set("/data/values", 1, 40)
	disk.set("/data/datastore", 1, 40)
	disk.set("/tmp/store", 2, 70)
	mon := must[*freeze.Monitor](t)(freeze.NewMonitor(
		[]string{"/data/values", "/data/datastore", "/tmp/store", "/data/values"}, freeze.WithDiskReader(disk)))
	if u, err := mon.Check(context.Background()); err != nil || u != 70 {
		t.Fatalf("Check = %v, %v; want 70", u, err)
	}
	if n := len(disk.callTimes()); n != 2 {
		t.Errorf("%d Usage reads for 2 devices", n)
	}
	// A directory whose device cannot be read fails the check.
	mon = must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data/values", "/missing"}, freeze.WithDiskReader(disk)))
	if u, err := mon.Check(context.Background()); u != -1 || !errors.Is(err, freeze.ErrDiskUsage) {
		t.Errorf("Check with a missing dir = %v, %v", u, err)
	}
}

// countingReader wraps the statfs reader without its Device method, so the
// Monitor groups directories by os.Stat.
type countingReader struct{ n atomic.Int32 }

func (r *countingReader) Usage(dir string) (uint64, uint64, error) {
	r.n.Add(1)
	return (freeze.StatfsReader{}).Usage(dir)
}

// The default reader on a real directory: a sane percentage, one read per
// device.
func TestStatfsReader(t *testing.T) {
	dir := t.TempDir()
	used, total, err := (freeze.StatfsReader{}).Usage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || used > total {
		t.Fatalf("used %d of %d", used, total)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &countingReader{}
	mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{a, b}, freeze.WithDiskReader(r)))
	p, err := mon.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !(p > 0 && p <= 100) {
		t.Errorf("usage %v%%, want in (0, 100]", p)
	}
	if r.n.Load() != 1 {
		t.Errorf("%d reads for two directories on one device", r.n.Load())
	}
	def := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{dir}))
	if p2, err := def.Check(context.Background()); err != nil || math.Abs(p2-p) > 5 {
		t.Errorf("default reader: %v, %v (statfs gave %v)", p2, err, p)
	}
	if _, _, err := (freeze.StatfsReader{}).Usage(filepath.Join(dir, "missing")); err == nil {
		t.Error("statfs of a missing directory succeeded")
	}
}

func TestMonitorOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		dirs []string
		opts []freeze.MonitorOption
	}{
		"no dirs":       {nil, nil},
		"empty dir":     {[]string{""}, nil},
		"over 100":      {[]string{"/d"}, []freeze.MonitorOption{freeze.WithFreezeAtPercent(101)}},
		"NaN":           {[]string{"/d"}, []freeze.MonitorOption{freeze.WithFreezeAtPercent(math.NaN())}},
		"nil reader":    {[]string{"/d"}, []freeze.MonitorOption{freeze.WithDiskReader(nil)}},
		"nil logger":    {[]string{"/d"}, []freeze.MonitorOption{freeze.WithLogger(nil)}},
		"zero interval": {[]string{"/d"}, []freeze.MonitorOption{freeze.WithPollIntervals(0, time.Hour)}},
		"max below min": {[]string{"/d"}, []freeze.MonitorOption{freeze.WithPollIntervals(time.Hour, time.Minute)}},
		"zero retry":    {[]string{"/d"}, []freeze.MonitorOption{freeze.WithRetryInterval(0)}},
	} {
		if _, err := freeze.NewMonitor(tc.dirs, tc.opts...); !errors.Is(err, freeze.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	for p, want := range map[float64]float64{0: 90, -1: -1, -0.5: -1, 95: 95, 100: 100} {
		m := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/d"}, freeze.WithFreezeAtPercent(p)))
		if m.FreezeAt() != want || m.Enabled() != (want >= 0) {
			t.Errorf("WithFreezeAtPercent(%v): FreezeAt %v, Enabled %v", p, m.FreezeAt(), m.Enabled())
		}
	}
	m := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/d"}))
	if m.FreezeAt() != 90 || m.Usage() != -1 {
		t.Errorf("defaults: FreezeAt %v, Usage %v", m.FreezeAt(), m.Usage())
	}
}

// Only one Run at a time.
func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := newFakeDisk()
		disk.set("/d", 1, 10)
		mon := must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/d"}, freeze.WithDiskReader(disk)))
		stop := run(t, mon)
		synctest.Wait()
		if err := mon.Run(context.Background()); !errors.Is(err, freeze.ErrRunTwice) {
			t.Errorf("second Run: %v", err)
		}
		f := must[*freeze.Freezer](t)(freeze.Open(context.Background(), &memStore{}, mon))
		if err := f.Run(context.Background()); !errors.Is(err, freeze.ErrRunTwice) {
			t.Errorf("Freezer Run beside its Monitor's: %v", err)
		}
		_ = stop()
	})
}
