package pace

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// acquireAsync starts an Acquire and returns a channel that receives its
// result.
func acquireAsync(ctx context.Context, p *Pacer) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.Acquire(ctx) }()
	return ch
}

// blocked reports whether ch stays empty for d.
func blocked(ch <-chan error, d time.Duration) bool {
	select {
	case <-ch:
		return false
	case <-time.After(d):
		return true
	}
}

func TestNoLookupsNoLimit(t *testing.T) {
	p := New(Config{Workers: 1})
	for range 5 {
		if err := p.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Turns != 5 || st.Waits != 0 {
		t.Errorf("stats %+v: want 5 turns and no wait without lookups", st)
	}
	if got := p.CompactionLimit(); got != math.MaxInt {
		t.Errorf("compaction limit %d without lookups, want none (MaxInt)", got)
	}
}

func TestLookupInFlightLimitsTurns(t *testing.T) {
	p := New(Config{Workers: 2, Compactions: 1, Quiet: time.Hour})
	end := p.Lookup()
	ctx := context.Background()
	for range 2 {
		if err := p.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	third := acquireAsync(ctx, p)
	if !blocked(third, 50*time.Millisecond) {
		t.Fatal("a third turn was handed out while a lookup ran, with 2 workers allowed")
	}
	if got := p.CompactionLimit(); got != 1 {
		t.Errorf("compaction limit %d while a lookup runs, want 1", got)
	}
	p.Release()
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	end()
	st := p.Stats()
	if st.Lookups != 1 || st.InFlight != 0 || st.Turns != 3 || st.Waits != 1 || st.Waited <= 0 {
		t.Errorf("stats %+v: want 1 lookup, none in flight, 3 turns, 1 wait of some time", st)
	}
}

// Turns held before lookups came are not taken back: new ones wait until
// enough of them end.
func TestTurnsHeldBeforeLookupsFinish(t *testing.T) {
	p := New(Config{Workers: 1, Quiet: time.Hour})
	ctx := context.Background()
	for range 3 {
		if err := p.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	defer p.Lookup()()
	next := acquireAsync(ctx, p)
	for i := range 2 {
		p.Release()
		if !blocked(next, 30*time.Millisecond) {
			t.Fatalf("a turn was handed out with %d of the 3 earlier ones still held, 1 allowed", 2-i)
		}
	}
	p.Release()
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}

func TestQuietEndsPacing(t *testing.T) {
	const quiet = 40 * time.Millisecond
	p := New(Config{Workers: 1, Quiet: quiet})
	ctx := context.Background()
	if err := p.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.Lookup()() // a lookup that is over: pacing lasts quiet after it
	if !p.Queried() {
		t.Fatal("not queried right after a lookup")
	}
	second := acquireAsync(ctx, p)
	if err := <-second; err != nil { // no Release: the quiet time frees it
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < quiet {
		t.Errorf("the second turn came after %v, before the quiet time of %v was over", waited, quiet)
	}
	if p.Queried() || p.CompactionLimit() != math.MaxInt {
		t.Errorf("still pacing after the quiet time")
	}
}

func TestAcquireEndsWithContext(t *testing.T) {
	p := New(Config{Workers: 1, Quiet: time.Hour})
	defer p.Lookup()()
	if err := p.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(ctx, p)
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v, want context.Canceled", err)
	}
	// The cancelled wait took no turn: one Release frees the next.
	p.Release()
	if err := p.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLookupsHandlerMarksRequests(t *testing.T) {
	p := New(Config{Quiet: time.Hour})
	var during atomic.Bool
	h := p.Lookups(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during.Store(p.Stats().InFlight == 1 && p.Queried())
	}))
	if p.Queried() {
		t.Fatal("queried before any lookup")
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/multihash/x", nil))
	if !during.Load() {
		t.Error("the handler ran without its lookup marked in flight")
	}
	if st := p.Stats(); st.Lookups != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v after one request: want 1 lookup, none in flight", st)
	}
}

func TestDefaults(t *testing.T) {
	p := New(Config{})
	if p.compactions != 1 || p.quiet != DefaultQuiet || p.workers < 1 {
		t.Errorf("defaults: %d compactions, quiet %v, %d workers", p.compactions, p.quiet, p.workers)
	}
}
