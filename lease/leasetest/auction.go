package leasetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/lease"
)

func testPutGet(t *testing.T, s *suite) {
	e := s.open(t)
	if _, err := e.s.Get(e.ctx, "nope"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	if err := e.s.Put(e.ctx, lease.Item{}); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Put(empty ID) = %v, want ErrInvalid", err)
	}
	e.put(lease.Item{ID: "a", Commit: "c1", Size: 10, MaxBids: 2, MinBid: 5})
	r := e.get("a")
	if r.ID != "a" || r.Commit != "c1" || r.Size != 10 || r.MaxBids != 2 || r.MinBid != 5 {
		t.Fatalf("Get = %+v", r)
	}
	if r.Owner != "" || r.State != lease.Idle || r.Fence != 0 || r.Round != 0 || r.Bids != 0 {
		t.Fatalf("new row not idle: %+v", r)
	}
	v := r.Version
	e.put(lease.Item{ID: "a", Commit: "c2"})
	if r := e.get("a"); r.Commit != "c2" || r.Version <= v {
		t.Fatalf("after second Put: %+v (version was %d)", r, v)
	}
	if _, err := e.s.Bid(e.ctx, "nope", "n1", 1); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Bid(missing) = %v, want ErrNotFound", err)
	}
}

func testAuctionOpens(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	if r := e.evaluate("a"); r.Outcome != lease.NoAuction {
		t.Fatalf("Evaluate before any bid: %v, want NoAuction", r.Outcome)
	}
	b := e.bid("a", "n1", 100)
	if b.Round != 1 || b.Seq != 1 || b.Bids != 1 || b.Result != nil {
		t.Fatalf("first bid: %+v", b)
	}
	r := e.get("a")
	if r.Round != 1 || r.Bids != 1 || r.AuctionDeadline.IsZero() || r.Owner != "" {
		t.Fatalf("row after first bid: %+v", r)
	}
	if ev := e.evaluate("a"); ev.Outcome != lease.NotDue {
		t.Fatalf("Evaluate inside the window: %v, want NotDue", ev.Outcome)
	}
	b = e.bid("a", "n2", 50)
	if b.Round != 1 || b.Seq != 2 || b.Bids != 2 {
		t.Fatalf("second bid: %+v", b)
	}
}

func testRanking(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.bid("a", "small", 100)
	e.bid("a", "first", 300)
	e.bid("a", "second", 300)
	e.advancePast(windowU)
	r := e.evaluate("a")
	g := wantGrant(t, &r, "first")
	if !r.TimedOut || r.ShortCircuited || r.Bids != 3 || g.Fence == 0 || g.Round != 1 {
		t.Fatalf("result %+v grant %+v", r, g)
	}
	row := e.get("a")
	if row.Owner != "first" || row.State != lease.Leased || row.Fence != g.Fence || row.Bids != 0 || !row.AuctionDeadline.IsZero() {
		t.Fatalf("row after grant: %+v", row)
	}
	if r := e.evaluate("a"); r.Outcome != lease.NoAuction {
		t.Fatalf("second Evaluate: %v, want NoAuction", r.Outcome)
	}
	e.bidErr("a", "small", 1000, lease.ErrLeased)
}

func testShortCircuit(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMaxBids(3))
	e.put(lease.Item{ID: "a"})
	e.bid("a", "n1", 10)
	if b := e.bid("a", "n2", 30); b.Result != nil {
		t.Fatalf("closed after 2 of 3 bids: %+v", b.Result)
	}
	b := e.bid("a", "n3", 20)
	g := wantGrant(t, b.Result, "n2")
	if !b.Result.ShortCircuited || b.Result.TimedOut || g.Bids != 3 {
		t.Fatalf("short circuit result %+v", b.Result)
	}
	// The per-item override beats the static threshold.
	e.put(lease.Item{ID: "b", MaxBids: 1})
	wantGrant(t, e.bid("b", "n4", 1).Result, "n4")
}

func testDynamicMaxBids(t *testing.T, s *suite) {
	e := s.open(t, lease.WithDynamicMaxBids(5*s.u), lease.WithMaxBids(10))
	e.put(lease.Item{ID: "a"})
	e.heartbeat("n1", "n2", "n3")
	if lc, ok := e.s.(lease.LiveCounter); ok {
		if n, err := lc.LiveNodes(e.ctx); err != nil || n != 3 {
			t.Fatalf("LiveNodes = %d, %v; want 3", n, err)
		}
	}
	e.bid("a", "n1", 1)
	e.bid("a", "n2", 3)
	b := e.bid("a", "n3", 2)
	if g := wantGrant(t, b.Result, "n2"); !b.Result.ShortCircuited || g.Bids != 3 {
		t.Fatalf("result %+v", b.Result)
	}
	// Nodes that stopped heartbeating no longer count.
	e.advancePast(5)
	e.heartbeat("n1")
	e.put(lease.Item{ID: "b"})
	wantGrant(t, e.bid("b", "n1", 1).Result, "n1")
	if lc, ok := e.s.(lease.LiveCounter); ok {
		if n, err := lc.LiveNodes(e.ctx); err != nil || n != 1 {
			t.Fatalf("LiveNodes = %d, %v; want 1", n, err)
		}
	}
	// With no live node at all the static threshold applies.
	e.advancePast(5)
	e.put(lease.Item{ID: "c"})
	if b := e.bid("c", "n1", 1); b.Result != nil {
		t.Fatalf("closed with no live node and MaxBids 10: %+v", b.Result)
	}
}

func testThresholdChange(t *testing.T, s *suite) {
	e := s.open(t, lease.WithDynamicMaxBids(5*s.u))

	// The threshold falls below the bids already placed: the auction closes
	// with every one of them considered.
	e.put(lease.Item{ID: "down"})
	e.heartbeat("n1", "n2", "n3", "n4")
	e.bid("down", "n1", 10)
	e.bid("down", "n2", 20)
	if r := e.evaluate("down"); r.Outcome != lease.NotDue {
		t.Fatalf("2 of 4 bids: %v, want NotDue", r.Outcome)
	}
	e.advancePast(5)
	e.heartbeat("n1", "n2")
	r := e.evaluate("down")
	if g := wantGrant(t, &r, "n2"); g.Bids != 2 || !r.ShortCircuited {
		t.Fatalf("after threshold fell: %+v", r)
	}

	// The threshold rises past the bids: the auction stays open with its
	// bids, and the window closes it.
	e.put(lease.Item{ID: "up"})
	e.bid("up", "n1", 30)
	e.heartbeat("n3", "n4", "n5")
	e.bid("up", "n3", 5)
	if row := e.get("up"); row.Bids != 2 || row.Round != 1 {
		t.Fatalf("after threshold rose: %+v", row)
	}
	if r := e.evaluate("up"); r.Outcome != lease.NotDue {
		t.Fatalf("2 of 5 bids: %v, want NotDue", r.Outcome)
	}
	e.advancePast(windowU)
	r = e.evaluate("up")
	if g := wantGrant(t, &r, "n1"); g.Bids != 2 || !r.TimedOut {
		t.Fatalf("at the backstop: %+v", r)
	}
}

func testWindowBackstop(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMaxBids(10))
	e.put(lease.Item{ID: "a"})
	e.bid("a", "n1", 1)
	e.advance(windowU - 1)
	if r := e.evaluate("a"); r.Outcome != lease.NotDue {
		t.Fatalf("before the window: %v", r.Outcome)
	}
	e.bid("a", "n2", 1)
	e.advancePast(1)
	r := e.evaluate("a")
	if g := wantGrant(t, &r, "n1"); !r.TimedOut || g.Bids != 2 {
		t.Fatalf("at the window: %+v", r)
	}
	// A bid that arrives after the window closes the auction instead.
	e.put(lease.Item{ID: "b"})
	e.bid("b", "n3", 1)
	e.advancePast(windowU)
	e.bidErr("b", "n4", 100, lease.ErrAuctionClosed)
	if row := e.get("b"); row.Owner != "n3" {
		t.Fatalf("late bid did not close the auction: %+v", row)
	}
}

func testOnePendingBid(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 10)
	e.bid("a", "n2", 5)
	e.bidErr("b", "n1", 10, lease.ErrBidPending)
	e.bidErr("a", "n1", 10, lease.ErrBidPending)
	e.advancePast(windowU)
	r := e.evaluate("a")
	wantGrant(t, &r, "n1")
	// Closing the auction clears the winner's and the loser's markers.
	e.bid("b", "n1", 10)
	e.put(lease.Item{ID: "c"})
	e.bid("c", "n2", 10)
}

func testPendingExpires(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 10)
	e.advance(windowU)
	e.bidErr("b", "n1", 10, lease.ErrBidPending) // within the grace
	e.advancePast(graceU)
	e.bid("b", "n1", 10) // a's auction was never evaluated
	if r := e.evaluate("a"); r.Outcome != lease.Granted {
		t.Fatalf("a: %v", r.Outcome)
	}
}

func testMinBid(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMinBidFactor(1.5))
	e.put(lease.Item{ID: "a", MinBid: 500, MaxBids: 1})
	e.bidErr("a", "n1", 499, lease.ErrBidTooLow)
	ref := wantGrant(t, e.bid("a", "n1", 500).Result, "n1").Ref
	size := int64(1000)
	row, err := e.s.Update(e.ctx, ref, lease.Mutation{Size: &size})
	if err != nil {
		t.Fatal(err)
	}
	if row.MinBid != 1500 || row.Size != 1000 {
		t.Fatalf("after reporting size: %+v", row)
	}
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	e.bidErr("a", "n2", 1499, lease.ErrBidTooLow)
	e.bid("a", "n2", 1500)
}

func testLiveBiddersOnly(t *testing.T, s *suite) {
	e := s.open(t, lease.WithLiveBiddersOnly(), lease.WithDynamicMaxBids(3*s.u))
	e.put(lease.Item{ID: "a", MaxBids: 5})
	e.heartbeat("big", "small")
	e.bid("a", "big", 100)
	e.bid("a", "small", 10)
	e.advance(3)
	e.heartbeat("small")
	e.advancePast(windowU - 3)
	e.heartbeat("small")
	r := e.evaluate("a")
	wantGrant(t, &r, "small") // big stopped heartbeating: next best wins
}

// testConcurrentEvaluators runs 20 auctions, each closed by its window and
// evaluated by 16 goroutines at once: exactly one of them grants it. The
// auctions run on ten items, two rounds each (the second after a release),
// so that on real time the rounds share their waits for the window.
func testConcurrentEvaluators(t *testing.T, s *suite) {
	const items, rounds = 10, 2
	e := s.open(t)
	for it := range items {
		e.put(lease.Item{ID: fmt.Sprintf("i%d", it)})
	}
	for round := range rounds {
		// One node name per item and bidder: a node has one pending bid.
		for it := range items {
			for i := range 4 {
				e.bid(fmt.Sprintf("i%d", it), fmt.Sprintf("n%d-%d", it, i), int64(i))
			}
		}
		e.advancePast(windowU)
		for it := range items {
			id := fmt.Sprintf("i%d", it)
			var granted, others atomic.Int32
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					r, err := e.s.Evaluate(e.ctx, id)
					switch {
					case err != nil:
						t.Errorf("Evaluate: %v", err)
					case r.Outcome == lease.Granted:
						granted.Add(1)
					case r.Outcome == lease.NoAuction:
						others.Add(1)
					default:
						t.Errorf("Evaluate: %v", r.Outcome)
					}
				})
			}
			wg.Wait()
			if granted.Load() != 1 || others.Load() != 15 {
				t.Fatalf("%s round %d: %d grants, %d no-auction", id, round+1, granted.Load(), others.Load())
			}
			row := e.get(id)
			if want := fmt.Sprintf("n%d-3", it); row.Owner != want || row.Round != uint64(round+1) {
				t.Fatalf("%s round %d: owner %q in round %d, want %q", id, round+1, row.Owner, row.Round, want)
			}
			if err := e.s.Release(e.ctx, lease.Ref{Item: id, Holder: row.Owner, Fence: row.Fence}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
