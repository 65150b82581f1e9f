package scatter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/scatter/find"
)

// A slow backend trips its breaker (timeouts are failures), is skipped
// while open, probed when half-open with a growing backoff, and closes
// once it is fast again.
func TestGatherBreakerSlowBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
		slow := &gatherFake{results: []find.ProviderResult{gres("B", "c", "m")}, delay: time.Hour}
		var mu sync.Mutex
		var changes []string
		g, err := NewGather(gatherBackends(fast, slow),
			WithBackendTimeout(100*time.Millisecond),
			WithBreaker(BreakerConfig{Failures: 3, Window: time.Second, BackoffMin: time.Second, BackoffMax: 2 * time.Second, Probes: 1, Successes: 2}),
			WithHooks(GatherHooks{OnStateChange: func(b int, from, to BreakerState) {
				mu.Lock()
				defer mu.Unlock()
				changes = append(changes, fmt.Sprintf("%d:%v>%v", b, from, to))
			}}),
		)
		if err != nil {
			t.Fatal(err)
		}
		lookup := func(wantRes []string, want *find.PartialError, is error) {
			t.Helper()
			got, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			slices.Sort(got)
			if !slices.Equal(got, wantRes) {
				t.Errorf("results %q, want %q", got, wantRes)
			}
			checkPartialErr(t, err, want, is)
		}
		timedOut := &find.PartialError{Answered: 1, Total: 2, TimedOut: 1}
		skipped := &find.PartialError{Answered: 1, Total: 2}
		for range 3 {
			lookup([]string{"A/c=m"}, timedOut, context.DeadlineExceeded)
		}
		if s := g.Stats().Backends[1]; s.State != BreakerOpen || s.TimedOut != 3 || s.Failures != 3 {
			t.Fatalf("slow backend after 3 timeouts: %+v", s)
		}
		// Open: skipped, without waiting for it.
		start := time.Now()
		lookup([]string{"A/c=m"}, skipped, ErrBreakerOpen)
		if time.Since(start) != 0 || slow.calls.Load() != 3 {
			t.Errorf("open breaker: Find took %v, slow backend called %d times", time.Since(start), slow.calls.Load())
		}
		// After the backoff, one probe, which times out: open for twice as
		// long.
		time.Sleep(time.Second)
		lookup([]string{"A/c=m"}, timedOut, context.DeadlineExceeded)
		time.Sleep(time.Second)
		lookup([]string{"A/c=m"}, skipped, ErrBreakerOpen)
		time.Sleep(time.Second)
		// The backend recovers: two probes close the breaker.
		slow.delay = 0
		lookup([]string{"A/c=m", "B/c=m"}, nil, nil)
		if s := g.Stats().Backends[1]; s.State != BreakerHalfOpen {
			t.Errorf("after one probe success the breaker is %v", s.State)
		}
		lookup([]string{"A/c=m", "B/c=m"}, nil, nil)
		want := []string{"1:closed>open", "1:open>half-open", "1:half-open>open", "1:open>half-open", "1:half-open>closed"}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(changes, want) {
			t.Errorf("state changes %q, want %q", changes, want)
		}
		if s := g.Stats(); s.Backends[1].Skipped != 2 || s.Backends[0].Failures != 0 || s.Partial != 6 {
			t.Errorf("stats %+v", s)
		}
	})
}

// In half-open state only Probes requests are in flight at once; the others
// are skipped.
func TestGatherHalfOpenProbeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &gatherFake{err: errGatherBoom}
		g, err := NewGather(gatherBackends(b), WithBreaker(BreakerConfig{Failures: 1, BackoffMin: time.Second, Probes: 1, Successes: 1}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = gatherCollect(t, g.Find(t.Context(), gatherMH))
		checkPartialErr(t, err, &find.PartialError{Total: 1}, errGatherBoom)
		time.Sleep(time.Second)
		b.err, b.wait = nil, make(chan struct{})
		done := make(chan error)
		go func() {
			_, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			done <- err
		}()
		synctest.Wait() // the probe is in flight
		_, err = gatherCollect(t, g.Find(t.Context(), gatherMH))
		checkPartialErr(t, err, &find.PartialError{Total: 1}, ErrBreakerOpen)
		close(b.wait)
		if err := <-done; err != nil {
			t.Errorf("probe: %v", err)
		}
		if _, err := gatherCollect(t, g.Find(t.Context(), gatherMH)); err != nil {
			t.Errorf("after the probe: %v", err)
		}
		if b.calls.Load() != 3 {
			t.Errorf("backend called %d times, want 3", b.calls.Load())
		}
	})
}
