package freeze_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/freeze"
)

func newMon(t testing.TB, disk *fakeDisk, opts ...freeze.MonitorOption) *freeze.Monitor {
	t.Helper()
	return must[*freeze.Monitor](t)(freeze.NewMonitor([]string{"/data"}, append([]freeze.MonitorOption{freeze.WithDiskReader(disk)}, opts...)...))
}

// Usage reaching the limit freezes the node: OnFreeze runs once with the
// time of the freeze, the state is persisted, and checks go on (for the
// usage figure) at the frozen interval, with throttled logs.
func TestFreezeAtLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		logger, logs := newLogCapture()
		disk := newFakeDisk()
		disk.set("/data", 1, 50)
		st := &memStore{}
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, disk, freeze.WithLogger(logger)), c.options()...))
		stop := run(t, f)
		time.Sleep(time.Hour)
		if f.Frozen() {
			t.Fatal("frozen at 50%")
		}
		disk.setAll(90)
		start := time.Now()
		time.Sleep(25 * time.Minute) // the check due 24 min after the last one at 50% freezes
		if !f.Frozen() || f.State() != freeze.Frozen {
			t.Fatalf("state %v at 90%%", f.State())
		}
		freezes, _, states := c.snapshot()
		if len(freezes) != 1 || !freezes[0].Equal(f.FrozenAt()) {
			t.Errorf("OnFreeze calls %v, FrozenAt %v", freezes, f.FrozenAt())
		}
		if at := f.FrozenAt(); at.Before(start) || at.After(time.Now()) {
			t.Errorf("FrozenAt %v not within the last 25 min (%v)", at, time.Now())
		}
		if !slices.Equal(states, []string{"freezing", "frozen"}) {
			t.Errorf("state changes %v", states)
		}
		if !strings.Contains(st.String(), `"frozen"`) {
			t.Errorf("persisted %s", st)
		}
		s := f.Status()
		if !s.Frozen || s.State != freeze.Frozen || s.Usage != 90 || s.FreezeAt != 90 || !s.FrozenAt.Equal(f.FrozenAt()) {
			t.Errorf("Status %+v", s)
		}
		if logs.count(slog.LevelWarn, "indexer frozen") != 1 || logs.count(slog.LevelError, "disk usage critical") != 1 {
			t.Errorf("logs %v", logs.records())
		}
		// Frozen: a check every 5 minutes, one INFO log an hour, no more
		// critical logs, no second freeze.
		n := len(disk.callTimes())
		logs.reset()
		time.Sleep(time.Hour)
		if got := len(disk.callTimes()) - n; got != 12 {
			t.Errorf("%d checks in the first frozen hour, want 12", got)
		}
		if r := logs.records(); len(r) != 1 || r[0].Level != slog.LevelInfo || r[0].Attrs["frozen"] != true {
			t.Errorf("frozen logs %v", r)
		}
		if freezes, _, _ := c.snapshot(); len(freezes) != 1 {
			t.Errorf("%d OnFreeze calls", len(freezes))
		}
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// Freezer.Check freezes at once, for callers that drive usage themselves.
func TestCheckFreezes(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk()
	disk.set("/data", 1, 89)
	var c calls
	f := must[*freeze.Freezer](t)(freeze.Open(ctx, &memStore{}, newMon(t, disk), c.options()...))
	if u, err := f.Check(ctx); err != nil || u != 89 || f.Frozen() {
		t.Fatalf("Check at 89%%: %v, %v, frozen %v", u, err, f.Frozen())
	}
	disk.setAll(90.5)
	if u, err := f.Check(ctx); err != nil || u != 90.5 || !f.Frozen() {
		t.Fatalf("Check at 90.5%%: %v, %v, frozen %v", u, err, f.Frozen())
	}
}

// With freezing disabled (negative percent) nothing freezes the node, the
// usage is still measured, and a manual freeze is refused.
func TestDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		logger, logs := newLogCapture()
		disk := newFakeDisk()
		disk.set("/data", 1, 100)
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, &memStore{}, newMon(t, disk, freeze.WithFreezeAtPercent(-1), freeze.WithLogger(logger)), c.options()...))
		stop := run(t, f)
		time.Sleep(2*time.Hour + time.Minute)
		_ = stop()
		if f.Frozen() {
			t.Fatal("frozen with freezing disabled")
		}
		if froze, err := f.Freeze(ctx); froze || !errors.Is(err, freeze.ErrDisabled) {
			t.Errorf("Freeze = %v, %v; want ErrDisabled", froze, err)
		}
		if s := f.Status(); s.Frozen || s.Usage != 100 || s.FreezeAt != -1 {
			t.Errorf("Status %+v", s)
		}
		if freezes, _, _ := c.snapshot(); len(freezes) != 0 {
			t.Errorf("OnFreeze called %d times", len(freezes))
		}
		if logs.count(slog.LevelError, "disk usage critical") != 0 || logs.count(slog.LevelWarn, "disk usage alert") != 0 {
			t.Errorf("alerts with freezing disabled: %v", logs.records())
		}
		if n := len(disk.callTimes()); n != 25 { // every 5 minutes for 2h
			t.Errorf("%d checks in 2h", n)
		}
	})
}

// A manual freeze is idempotent: the second call reports false, no error,
// and runs no second snapshot.
func TestManualFreezeIdempotent(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk()
	disk.set("/data", 1, 10)
	var c calls
	f := must[*freeze.Freezer](t)(freeze.Open(ctx, &memStore{}, newMon(t, disk), c.options()...))
	if f.Frozen() || !f.FrozenAt().IsZero() || f.State() != freeze.Unfrozen {
		t.Fatal("a new Freezer is frozen")
	}
	if froze, err := f.Freeze(ctx); !froze || err != nil {
		t.Fatalf("first Freeze = %v, %v", froze, err)
	}
	at := f.FrozenAt()
	if froze, err := f.Freeze(ctx); froze || err != nil {
		t.Fatalf("second Freeze = %v, %v", froze, err)
	}
	if freezes, _, _ := c.snapshot(); len(freezes) != 1 || !freezes[0].Equal(at) || !f.FrozenAt().Equal(at) {
		t.Errorf("OnFreeze %v, FrozenAt %v then %v", freezes, at, f.FrozenAt())
	}
}

// The frozen state survives a restart: a new Freezer on the same file is
// frozen at the same time and does not snapshot again.
func TestRestartStaysFrozen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freeze.json")
	disk := newFakeDisk()
	disk.set("/data", 1, 10)
	var c calls
	f := must[*freeze.Freezer](t)(freeze.Open(ctx, freeze.FileStore(path), newMon(t, disk), c.options()...))
	if _, err := f.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	at := f.FrozenAt()

	var c2 calls
	f2 := must[*freeze.Freezer](t)(freeze.Open(ctx, freeze.FileStore(path), newMon(t, disk), c2.options()...))
	if !f2.Frozen() || f2.State() != freeze.Frozen || !f2.FrozenAt().Equal(at) {
		t.Errorf("after restart: %v at %v, want frozen at %v", f2.State(), f2.FrozenAt(), at)
	}
	if freezes, unfreezes, _ := c2.snapshot(); len(freezes)+len(unfreezes) != 0 {
		t.Errorf("restart ran callbacks: %v %v", freezes, unfreezes)
	}
	// Usage below the limit does not unfreeze without the option.
	if _, err := f2.Check(ctx); err != nil || !f2.Frozen() {
		t.Errorf("Check: %v, frozen %v", err, f2.Frozen())
	}
}

// A crash after the freeze intent is saved but before the snapshot
// completes: the next start runs the snapshot again, with the original
// time, and finishes the freeze.
func TestCrashAfterIntent(t *testing.T) {
	ctx := context.Background()
	disk := newFakeDisk()
	disk.set("/data", 1, 10)

	t.Run("snapshot interrupted", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "freeze.json")
		c := calls{failNext: 1} // the snapshot does not complete: the process dies in it
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, freeze.FileStore(path), newMon(t, disk), c.options()...))
		froze, err := f.Freeze(ctx)
		if !froze || !errors.Is(err, errInjected) {
			t.Fatalf("Freeze = %v, %v; want true and the snapshot's error", froze, err)
		}
		if !f.Frozen() || f.State() != freeze.Freezing {
			t.Fatalf("state %v after a failed snapshot, want freezing", f.State())
		}
		at := f.FrozenAt()
		// f is abandoned here, as by a crash.
		var c2 calls
		f2 := must[*freeze.Freezer](t)(freeze.Open(ctx, freeze.FileStore(path), newMon(t, disk), c2.options()...))
		if f2.State() != freeze.Frozen || !f2.FrozenAt().Equal(at) {
			t.Errorf("after restart: %v at %v, want frozen at %v", f2.State(), f2.FrozenAt(), at)
		}
		if freezes, _, _ := c2.snapshot(); len(freezes) != 1 || !freezes[0].Equal(at) {
			t.Errorf("OnFreeze on restart: %v, want once at %v", freezes, at)
		}
	})

	t.Run("final save lost", func(t *testing.T) {
		st := &memStore{failFrom: 2} // the intent is saved; "frozen" is not
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, disk), c.options()...))
		if froze, err := f.Freeze(ctx); !froze || !errors.Is(err, errInjected) || f.State() != freeze.Freezing {
			t.Fatalf("Freeze = %v, %v, state %v", froze, err, f.State())
		}
		at := f.FrozenAt()
		st.failFrom = 0
		var c2 calls
		f2 := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, disk), c2.options()...))
		if f2.State() != freeze.Frozen || !f2.FrozenAt().Equal(at) {
			t.Errorf("after restart: %v at %v", f2.State(), f2.FrozenAt())
		}
		if freezes, _, _ := c2.snapshot(); len(freezes) != 1 { // idempotent rerun
			t.Errorf("OnFreeze on restart: %v", freezes)
		}
	})

	t.Run("intent not saved", func(t *testing.T) {
		st := &memStore{failFrom: 1}
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, disk), c.options()...))
		if froze, err := f.Freeze(ctx); froze || !errors.Is(err, errInjected) || f.Frozen() {
			t.Fatalf("Freeze = %v, %v, frozen %v", froze, err, f.Frozen())
		}
		if freezes, _, _ := c.snapshot(); len(freezes) != 0 {
			t.Errorf("snapshot ran without a recorded intent")
		}
	})

	// Run retries a failed snapshot every retry interval, with the same
	// time, and a still-failing restart leaves the node frozen, not down.
	t.Run("retried by Run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := &memStore{}
			c := calls{failNext: 3}
			d := newFakeDisk()
			d.set("/data", 1, 95)
			mon := newMon(t, d, freeze.WithRetryInterval(10*time.Second))
			f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, mon, c.options()...))
			stop := run(t, f)
			synctest.Wait()
			if f.State() != freeze.Freezing {
				t.Fatalf("state %v after a failed snapshot", f.State())
			}
			// A restart meanwhile (another Freezer on the same store)
			// fails its snapshot too, and still opens, frozen.
			f2 := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d), c.options()...))
			if f2.State() != freeze.Freezing {
				t.Fatalf("reopened state %v", f2.State())
			}
			time.Sleep(25 * time.Second)
			_ = stop()
			freezes, _, _ := c.snapshot()
			if f.State() != freeze.Frozen || len(freezes) != 4 {
				t.Fatalf("state %v after %d snapshots", f.State(), len(freezes))
			}
			for _, at := range freezes {
				if !at.Equal(freezes[0]) {
					t.Errorf("snapshot times differ: %v", freezes)
				}
			}
		})
	})
}

// Unfreeze on start happens only below the limit, or with freezing
// disabled; it runs OnUnfreeze with the freeze time and clears the state.
func TestUnfreezeOnStart(t *testing.T) {
	ctx := context.Background()
	frozenStore := func(t *testing.T) (*memStore, time.Time) {
		st := &memStore{}
		d := newFakeDisk()
		d.set("/data", 1, 95)
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d)))
		if _, err := f.Check(ctx); err != nil || !f.Frozen() {
			t.Fatalf("not frozen at 95%%: %v", err)
		}
		return st, f.FrozenAt()
	}

	t.Run("above the limit", func(t *testing.T) {
		st, at := frozenStore(t)
		d := newFakeDisk()
		d.set("/data", 1, 91)
		logger, logs := newLogCapture()
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d, freeze.WithLogger(logger)), c.options(freeze.WithUnfreezeOnStart(true))...))
		if !f.Frozen() || !f.FrozenAt().Equal(at) {
			t.Errorf("unfrozen at 91%%")
		}
		if _, unfreezes, _ := c.snapshot(); len(unfreezes) != 0 {
			t.Errorf("OnUnfreeze ran above the limit")
		}
		if logs.count(slog.LevelWarn, "not unfreezing: disk usage at or above the freeze limit") != 1 {
			t.Errorf("logs %v", logs.records())
		}
	})

	t.Run("below the limit", func(t *testing.T) {
		st, at := frozenStore(t)
		d := newFakeDisk()
		d.set("/data", 1, 60) // capacity was added
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d), c.options(freeze.WithUnfreezeOnStart(true))...))
		if f.Frozen() || !f.FrozenAt().IsZero() {
			t.Errorf("still frozen at 60%%: %v", f.State())
		}
		_, unfreezes, states := c.snapshot()
		if len(unfreezes) != 1 || !unfreezes[0].Equal(at) {
			t.Errorf("OnUnfreeze %v, want once at %v", unfreezes, at)
		}
		if !slices.Equal(states, []string{"unfreezing", "unfrozen"}) {
			t.Errorf("state changes %v", states)
		}
		f2 := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d)))
		if f2.Frozen() {
			t.Error("frozen again after a restart")
		}
	})

	t.Run("freezing disabled", func(t *testing.T) { // reference bug #2671
		st, at := frozenStore(t)
		d := newFakeDisk()
		d.set("/data", 1, 99)
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d, freeze.WithFreezeAtPercent(-1)), c.options(freeze.WithUnfreezeOnStart(true))...))
		if _, unfreezes, _ := c.snapshot(); f.Frozen() || len(unfreezes) != 1 || !unfreezes[0].Equal(at) {
			t.Errorf("frozen %v, OnUnfreeze %v", f.Frozen(), unfreezes)
		}
	})

	t.Run("usage unknown", func(t *testing.T) {
		st, _ := frozenStore(t)
		d := newFakeDisk()
		d.set("/data", 1, 10)
		d.setErr(errInjected)
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d), freeze.WithUnfreezeOnStart(true)))
		if !f.Frozen() {
			t.Error("unfrozen without knowing the usage")
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		st, at := frozenStore(t)
		d := newFakeDisk()
		d.set("/data", 1, 10)
		c := calls{failNext: 1}
		if _, err := freeze.Open(ctx, st, newMon(t, d), c.options(freeze.WithUnfreezeOnStart(true))...); !errors.Is(err, errInjected) {
			t.Fatalf("Open with a failing OnUnfreeze: %v", err)
		}
		// The next start completes the unfreeze even without the option:
		// it was decided.
		var c2 calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, st, newMon(t, d), c2.options()...))
		if _, unfreezes, _ := c2.snapshot(); f.Frozen() || len(unfreezes) != 1 || !unfreezes[0].Equal(at) {
			t.Errorf("frozen %v, OnUnfreeze %v", f.Frozen(), unfreezes)
		}
	})

	t.Run("not frozen", func(t *testing.T) {
		d := newFakeDisk()
		d.set("/data", 1, 10)
		var c calls
		f := must[*freeze.Freezer](t)(freeze.Open(ctx, &memStore{}, newMon(t, d), c.options(freeze.WithUnfreezeOnStart(true))...))
		if _, unfreezes, _ := c.snapshot(); f.Frozen() || len(unfreezes) != 0 {
			t.Errorf("frozen %v, OnUnfreeze %v", f.Frozen(), unfreezes)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	d := newFakeDisk()
	d.set("/data", 1, 10)
	mon := newMon(t, d)
	if _, err := freeze.Open(ctx, nil, mon); !errors.Is(err, freeze.ErrInvalidOption) {
		t.Errorf("nil store: %v", err)
	}
	if _, err := freeze.Open(ctx, &memStore{}, nil); !errors.Is(err, freeze.ErrInvalidOption) {
		t.Errorf("nil monitor: %v", err)
	}
	for _, bad := range []string{`{`, `{"state":"melting","at":"2024-01-01T00:00:00Z"}`, `{"state":"frozen"}`} {
		if _, err := freeze.Open(ctx, &memStore{data: []byte(bad)}, mon); !errors.Is(err, freeze.ErrInvalidState) {
			t.Errorf("state %s: %v, want ErrInvalidState", bad, err)
		}
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(path, 0o755); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	if _, err := freeze.Open(ctx, freeze.FileStore(path), mon); err == nil {
		t.Error("Open over an unreadable state succeeded")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[freeze.State]string{freeze.Unfrozen: "unfrozen", freeze.Freezing: "freezing",
		freeze.Frozen: "frozen", freeze.Unfreezing: "unfreezing", freeze.State(9): "State(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", int(s), s.String())
		}
	}
}
