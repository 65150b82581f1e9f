package scatter

import (
	"testing"
	"time"
)

func testBreaker(t *testing.T, cfg BreakerConfig) *breaker {
	t.Helper()
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newBreaker(cfg)
}

var breakerT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fail sends one failing request at now.
func (b *breaker) fail(t *testing.T, now time.Time) transition {
	t.Helper()
	tk, ok, _ := b.allow(now)
	if !ok {
		t.Fatalf("request refused at %v in state %v", now.Sub(breakerT0), b.current())
	}
	return b.done(tk, outcomeFailure, now)
}

// The threshold counts failures within a sliding window; successes in
// between do not reset it.
func TestBreakerWindow(t *testing.T) {
	b := testBreaker(t, BreakerConfig{Failures: 3, Window: time.Second})
	now := breakerT0
	b.fail(t, now)
	b.fail(t, now.Add(600*time.Millisecond))
	b.fail(t, now.Add(1200*time.Millisecond)) // first one is out of the window
	if b.current() != BreakerClosed {
		t.Fatal("3 failures over 1.2 s opened a 1 s window")
	}
	tk, _, _ := b.allow(now.Add(1300 * time.Millisecond))
	b.done(tk, outcomeSuccess, now.Add(1300*time.Millisecond))
	if tr := b.fail(t, now.Add(1500*time.Millisecond)); !tr.changed || tr.to != BreakerOpen {
		t.Fatalf("3 failures within 0.9 s: %+v", tr)
	}
}

// Outcomes of requests let through before a state change are ignored, and
// abandoned requests count for nothing.
func TestBreakerStaleAndAbandoned(t *testing.T) {
	b := testBreaker(t, BreakerConfig{Failures: 2, BackoffMin: time.Second, Successes: 1})
	stale, _, _ := b.allow(breakerT0)
	b.fail(t, breakerT0)
	b.fail(t, breakerT0)
	if b.current() != BreakerOpen {
		t.Fatal("not open")
	}
	probe, ok, tr := b.allow(breakerT0.Add(time.Second))
	if !ok || tr.to != BreakerHalfOpen || !probe.probe {
		t.Fatalf("after backoff: %v %+v %+v", ok, tr, probe)
	}
	if tr := b.done(stale, outcomeFailure, breakerT0.Add(time.Second)); tr.changed || b.current() != BreakerHalfOpen {
		t.Fatal("a request sent while closed re-opened the half-open breaker")
	}
	if _, ok, _ := b.allow(breakerT0.Add(time.Second)); ok {
		t.Fatal("second probe let through with Probes 1")
	}
	b.done(probe, outcomeAbandoned, breakerT0.Add(time.Second))
	probe, ok, _ = b.allow(breakerT0.Add(time.Second))
	if !ok {
		t.Fatal("an abandoned probe kept its slot")
	}
	if tr := b.done(probe, outcomeSuccess, breakerT0.Add(time.Second)); tr.to != BreakerClosed {
		t.Fatalf("probe success: %+v", tr)
	}
}

// The open period doubles each time the breaker re-opens without closing,
// up to the maximum, and starts over once it closes.
func TestBreakerBackoff(t *testing.T) {
	b := testBreaker(t, BreakerConfig{Failures: 1, BackoffMin: time.Second, BackoffMax: 5 * time.Second, Successes: 1})
	now := breakerT0
	b.fail(t, now)
	for _, want := range []time.Duration{1, 2, 4, 5, 5} {
		want *= time.Second
		if _, ok, _ := b.allow(now.Add(want - 1)); ok {
			t.Fatalf("let through %v after opening, backoff %v", want-1, want)
		}
		now = now.Add(want)
		b.fail(t, now) // the half-open probe fails
	}
	now = now.Add(5 * time.Second)
	tk, _, _ := b.allow(now)
	b.done(tk, outcomeSuccess, now)
	b.fail(t, now)
	if _, ok, _ := b.allow(now.Add(time.Second)); !ok {
		t.Fatal("backoff did not start over after closing")
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 9: "BreakerState(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}
