package freeze_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/freeze"
)

// fakeDisk is a DiskReader and DeviceReader whose directories need not
// exist: each has a device and a usage in percent, set by the test.
type fakeDisk struct {
	mu    sync.Mutex
	dev   map[string]uint64
	pct   map[uint64]float64
	err   error
	calls []time.Time // time of each Usage call
	next  func() float64
}

func newFakeDisk() *fakeDisk {
	return &fakeDisk{dev: map[string]uint64{}, pct: map[uint64]float64{}}
}

// set puts dir on device dev at pct percent.
func (d *fakeDisk) set(dir string, dev uint64, pct float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dev[dir], d.pct[dev] = dev, pct
}

// setAll sets every device to pct.
func (d *fakeDisk) setAll(pct float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for dev := range d.pct {
		d.pct[dev] = pct
	}
}

func (d *fakeDisk) setErr(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
}

func (d *fakeDisk) Device(dir string) (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, ok := d.dev[dir]
	if !ok {
		return 0, fmt.Errorf("stat %s: no such directory", dir)
	}
	return dev, nil
}

func (d *fakeDisk) Usage(dir string) (used, total uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, time.Now())
	if d.err != nil {
		return 0, 0, d.err
	}
	pct := d.pct[d.dev[dir]]
	if d.next != nil {
		pct = d.next()
	}
	const size = 1_000_000
	return uint64(pct * size / 100), size, nil
}

func (d *fakeDisk) callTimes() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// logRec is one captured log record.
type logRec struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu   *sync.Mutex
	recs *[]logRec
}

func newLogCapture() (*slog.Logger, *logCapture) {
	h := &logCapture{mu: new(sync.Mutex), recs: new([]logRec)}
	return slog.New(h), h
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logCapture) WithGroup(string) slog.Handler            { return h }
func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRec{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { rec.Attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}

func (h *logCapture) records() []logRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.recs)
}

// count returns how many records have this level and message.
func (h *logCapture) count(lv slog.Level, msg string) int {
	n := 0
	for _, r := range h.records() {
		if r.Level == lv && r.Msg == msg {
			n++
		}
	}
	return n
}

func (h *logCapture) reset() {
	h.mu.Lock()
	*h.recs = nil
	h.mu.Unlock()
}

// memStore is a Store in memory whose saves can be made to fail.
type memStore struct {
	mu       sync.Mutex
	data     []byte
	saves    int
	failFrom int // saves numbered from 1; 0: never fail
}

var errInjected = errors.New("injected failure")

func (s *memStore) Load(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data), nil
}

func (s *memStore) Save(_ context.Context, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	if s.failFrom > 0 && s.saves >= s.failFrom {
		return errInjected
	}
	s.data = slices.Clone(b)
	return nil
}

func (s *memStore) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.data)
}

// calls records the callbacks a Freezer makes.
type calls struct {
	mu       sync.Mutex
	freezes  []time.Time
	unfreeze []time.Time
	states   []string
	failNext int // fail this many next OnFreeze/OnUnfreeze calls
}

func (c *calls) onFreeze(_ context.Context, at time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freezes = append(c.freezes, at)
	if c.failNext > 0 {
		c.failNext--
		return errInjected
	}
	return nil
}

func (c *calls) onUnfreeze(_ context.Context, at time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unfreeze = append(c.unfreeze, at)
	if c.failNext > 0 {
		c.failNext--
		return errInjected
	}
	return nil
}

func (c *calls) snapshot() (freezes, unfreezes []time.Time, states []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.freezes), slices.Clone(c.unfreeze), slices.Clone(c.states)
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func (c *calls) onState(s freeze.State, _ time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states = append(c.states, s.String())
}

// options returns the Freezer options that record into c.
func (c *calls) options(extra ...freeze.Option) []freeze.Option {
	return append([]freeze.Option{
		freeze.WithOnFreeze(c.onFreeze),
		freeze.WithOnUnfreeze(c.onUnfreeze),
		freeze.WithOnStateChange(c.onState),
	}, extra...)
}

// run starts r.Run in a goroutine; the returned stop cancels it and
// returns its result.
func run(t testing.TB, r interface{ Run(context.Context) error }) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
