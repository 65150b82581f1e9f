// Manager tests run in testing/synctest bubbles: built without -race, as
// manager_test.go explains.

//go:build !race

package agent_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/memory"
)

// signalLog keeps what a manager's hooks report about load.
type signalLog struct {
	mu        sync.Mutex
	last      agent.Signals
	maxSat    int
	claimed   map[string]time.Duration
	windows   []time.Duration
	took      int
	decisions []agent.Decision
	// afterWin: StalledRounds of each scan at which the node held more
	// than at the scan before (it won meanwhile).
	afterWin []int
}

func (l *signalLog) hooks() agent.Hooks {
	l.claimed = map[string]time.Duration{}
	return agent.Hooks{
		Scanned: func(s agent.Signals) {
			l.mu.Lock()
			if s.Held > l.last.Held {
				l.afterWin = append(l.afterWin, s.StalledRounds)
			}
			l.last, l.maxSat = s, max(l.maxSat, s.Saturated)
			l.mu.Unlock()
		},
		Claimed: func(ref lease.Ref, d time.Duration) {
			l.mu.Lock()
			l.claimed[ref.Item] = d
			l.mu.Unlock()
		},
		BidClosed: func(_ string, d time.Duration) {
			l.mu.Lock()
			l.windows = append(l.windows, d)
			l.mu.Unlock()
		},
		IndexTook: func(lease.Ref, time.Duration, error) {
			l.mu.Lock()
			l.took++
			l.mu.Unlock()
		},
		Scale: func(d agent.Decision, _ agent.Signals) {
			l.mu.Lock()
			l.decisions = append(l.decisions, d)
			l.mu.Unlock()
		},
	}
}

func (l *signalLog) get() (agent.Signals, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.maxSat
}

// Items that fit a node's budget but not its free memory count as
// saturated only once claims stop: while a second node with room takes
// them they do not, and once every node is full they do; the autoscaler
// then says Grow, once per cooldown. Claim latency and the bid window are
// reported for each win.
func TestManagerSaturationSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		putItems(t, s, 3, 60) // each fits a budget of 100; two never fit one node
		var la signalLog
		sc := &agent.Scaler{Cooldown: time.Hour}
		// Scans come every 0.5–1.5 s, and a few more on the feed's
		// changes: 10 rounds take more than 2 s and less than 20.
		a := start(t, s, "a", newIndexer(0), agent.WithBudget(100), agent.WithScanInterval(time.Second),
			agent.WithSaturationRounds(10), agent.WithHooks(la.hooks()), agent.WithAutoscaler(sc))
		waitHeld(t, a, 1)
		time.Sleep(2 * time.Second) // fewer than 10 stalled scans
		if sig, max := la.get(); max != 0 || sig.Unclaimed != 2 || sig.Held != 1 {
			t.Fatalf("after 2 s: signals %+v (max saturated %d), want 2 unclaimed, none saturated yet", sig, max)
		}
		time.Sleep(20 * time.Second)
		sig, _ := la.get()
		if sig.Saturated != 2 || sig.StalledRounds < 10 || sig.Items != 3 || sig.UnclaimedBytes != 120 || sig.NodesWanted() != 2 {
			t.Fatalf("after 13 s on one full node: signals %+v (nodes wanted %d), want 2 saturated of 120 bytes: 2 nodes wanted", sig, sig.NodesWanted())
		}
		la.mu.Lock()
		decisions := append([]agent.Decision(nil), la.decisions...)
		claimedA := la.claimed
		la.mu.Unlock()
		if len(decisions) != 1 || decisions[0] != agent.Grow {
			t.Fatalf("decisions %v, want one Grow (cooldown an hour)", decisions)
		}
		if len(claimedA) != 1 {
			t.Fatalf("claimed %v, want the one win", claimedA)
		}
		// The node's own win is a claim: the scan after it is no stall.
		la.mu.Lock()
		afterWin := append([]int(nil), la.afterWin...)
		la.mu.Unlock()
		if len(afterWin) != 1 || afterWin[0] != 0 {
			t.Fatalf("stalled rounds at the scans after a's wins: %v, want [0]", afterWin)
		}

		// A second node takes one more: the stall ends, then comes back
		// with the last item, which fits neither.
		var lb signalLog
		b := start(t, s, "b", newIndexer(0), agent.WithBudget(100), agent.WithScanInterval(time.Second),
			agent.WithSaturationRounds(10), agent.WithHooks(lb.hooks()))
		waitHeld(t, b, 1)
		time.Sleep(2 * time.Second)
		if sig, _ := la.get(); sig.Saturated != 0 || sig.Unclaimed != 1 {
			t.Fatalf("just after b's claim: a's signals %+v, want 1 unclaimed, none saturated", sig)
		}
		time.Sleep(20 * time.Second)
		for name, l := range map[string]*signalLog{"a": &la, "b": &lb} {
			if sig, _ := l.get(); sig.Saturated != 1 {
				t.Errorf("%s: signals %+v, want the last item saturated", name, sig)
			}
		}
		lb.mu.Lock()
		defer lb.mu.Unlock()
		for item, d := range lb.claimed {
			// a, full, does not bid: b's auction closes at once (if the
			// live count was 1) or runs its whole window (10 s).
			if d < 0 || d > 15*time.Second {
				t.Errorf("b claimed %s after waiting %v since its first scan, want at most the window of 10 s and a scan or two", item, d)
			}
		}
		if len(lb.windows) == 0 || lb.took != 1 {
			t.Errorf("b reported %d bid windows and %d index times, want some and 1", len(lb.windows), lb.took)
		}
	})
}

func waitHeld(t *testing.T, n *node, want int) {
	t.Helper()
	for range 600 {
		if len(n.m.Held()) >= want {
			synctest.Wait()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("held %d after 60 s, want %d", len(n.m.Held()), want)
}

// With a tracer, a won item leaves a claim span (outcome won), an index
// span and, for each Serve, a serve span; the index span is the parent
// of what the Indexer records under its context.
func TestManagerTracing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer tp.Shutdown(context.Background())
		s := newStore(t, lease.Hooks{})
		putItems(t, s, 1, 10)
		n := start(t, s, "a", newIndexer(time.Second), agent.WithTracer(tp.Tracer("test")))
		waitHeld(t, n, 1)
		time.Sleep(2 * time.Second)
		ctx, end := n.m.Serve(context.Background(), "item-00")
		end(nil)
		if ctx == context.Background() {
			t.Error("Serve returned the caller's context: no span in it")
		}
		byName := map[string][]sdktrace.ReadOnlySpan{}
		for _, sp := range rec.Ended() {
			byName[sp.Name()] = append(byName[sp.Name()], sp)
		}
		for _, name := range []string{"agent.claim", "agent.index", "agent.serve"} {
			if len(byName[name]) != 1 {
				t.Errorf("%d %s spans, want 1 (spans: %v)", len(byName[name]), name, byName)
			}
		}
		if cs := byName["agent.claim"]; len(cs) == 1 {
			found := false
			for _, kv := range cs[0].Attributes() {
				if kv.Key == "lease.outcome" {
					found = true
					if kv.Value.AsString() != "won" && kv.Value.AsString() != "closed elsewhere" {
						t.Errorf("claim outcome %q, want won", kv.Value.AsString())
					}
				}
			}
			if !found {
				t.Error("claim span without lease.outcome")
			}
		}
		if is := byName["agent.index"]; len(is) == 1 && is[0].EndTime().Sub(is[0].StartTime()) < time.Second {
			t.Errorf("index span of %v, want the indexer's second", is[0].EndTime().Sub(is[0].StartTime()))
		}
	})
}

// Without a tracer, Serve touches the item and records nothing.
func TestManagerServeWithoutTracer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		putItems(t, s, 1, 10)
		var l signalLog
		n := start(t, s, "a", newIndexer(0), agent.WithHooks(l.hooks()), agent.WithScanInterval(time.Second))
		waitHeld(t, n, 1)
		ctx, end := n.m.Serve(context.Background(), "item-00")
		end(nil)
		if ctx != context.Background() {
			t.Error("Serve without a tracer changed the context")
		}
		time.Sleep(2 * time.Second)
		if sig, _ := l.get(); sig.LastServed.IsZero() || !sig.IdleSince.IsZero() {
			t.Errorf("signals after Serve %+v, want LastServed set and no idle time (a lease held)", sig)
		}
	})
}

// slowRenewals is a store whose Renew takes delay longer.
type slowRenewals struct {
	*memory.Store
	delay atomic.Int64
}

func (s *slowRenewals) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.Store.Renew(ctx, refs...)
}

// Renewals come first: while a renewal round takes more than half the
// renewal interval, the node bids on nothing, and it bids again after a
// quick one.
func TestManagerRenewalsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &slowRenewals{Store: newStore(t, lease.Hooks{})}
		putItems(t, s, 1, 10)
		var bids atomic.Int64
		a := start(t, s, "a", newIndexer(0), agent.WithBudget(100), agent.WithScanInterval(time.Second),
			agent.WithHooks(agent.Hooks{BidPlaced: func(string, string, int64) { bids.Add(1) }}))
		waitHeld(t, a, 1)
		// Renewals every 10 s (a third of the TTL): 6 s is slow.
		s.delay.Store(int64(6 * time.Second))
		time.Sleep(25 * time.Second)
		before := bids.Load()
		for i := 1; i <= 2; i++ {
			if err := s.Put(context.Background(), lease.Item{ID: fmt.Sprintf("late-%d", i), Size: 10}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(30 * time.Second)
		if n := len(a.m.Held()); n != 1 || bids.Load() != before {
			t.Fatalf("with renewals slow: %d held, %d bids placed since; want 1 and none", n, bids.Load()-before)
		}
		s.delay.Store(0)
		time.Sleep(25 * time.Second)
		if n := len(a.m.Held()); n != 3 {
			t.Fatalf("after a quick renewal: %d held, want 3", n)
		}
	})
}
