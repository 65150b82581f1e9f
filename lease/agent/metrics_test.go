package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/leasetest"
	"github.com/indexkit/indexkit/lease/memory"
)

// Every store and lease counter of a Metrics moves when its event happens,
// and by exactly as much: driven on a memory store with a fake clock.
func TestMetricsStoreAndLease(t *testing.T) {
	ctx := context.Background()
	var met agent.Metrics
	clk := leasetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(lease.WithClock(clk), lease.WithHooks(met.StoreHooks()), lease.WithTTL(10*time.Second),
		lease.WithAuctionWindow(5*time.Second), lease.WithMaxBids(2), lease.WithStarveAfter(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(it lease.Item) {
		t.Helper()
		if err := s.Put(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	bid := func(item, node string, free int64) lease.BidResult {
		t.Helper()
		res, err := s.Bid(ctx, item, node, free)
		if err != nil {
			t.Fatalf("Bid(%s, %s): %v", item, node, err)
		}
		return res
	}
	reject := func(item, node string, free int64, want error) {
		t.Helper()
		if _, err := s.Bid(ctx, item, node, free); !errors.Is(err, want) {
			t.Fatalf("Bid(%s, %s) = %v, want %v", item, node, err, want)
		}
	}
	put(lease.Item{ID: "a"})
	put(lease.Item{ID: "b", MinBid: 100})
	put(lease.Item{ID: "c"})
	put(lease.Item{ID: "d"})

	bid("a", "n1", 50) // opens a: started, placed
	reject("b", "n1", 200, lease.ErrBidPending)
	reject("b", "n2", 50, lease.ErrBidTooLow)
	res := bid("a", "n2", 60) // short circuit: won by n2 with threshold 2
	reject("a", "n3", 1000, lease.ErrLeased)
	if res.Result == nil || res.Result.Grant == nil || res.Result.Threshold != 2 {
		t.Fatalf("short circuit: %+v", res.Result)
	}

	// n2 renews its lease on a and releases it.
	opts := []lease.HolderOption{lease.WithHolderClock(clk), lease.WithHolderHooks(met.LeaseHooks())}
	la, err := lease.Acquire(ctx, s, res.Result.Grant.Ref, opts...) // renewal 1
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Renew(ctx); err != nil { // renewal 2
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}

	bid("c", "n1", 10)                   // opens c
	put(lease.Item{ID: "c", MinBid: 50}) // the only bid is now too low
	clk.Advance(6 * time.Second)
	if r, err := s.Evaluate(ctx, "c"); err != nil || r.Outcome != lease.NoWinner || !r.TimedOut || !r.Starved {
		t.Fatalf("Evaluate(c) = %+v, %v; want a timed-out, starved close without winner", r, err)
	}

	bid("d", "n3", 10) // opens d
	clk.Advance(6 * time.Second)
	reject("d", "n4", 10, lease.ErrAuctionClosed) // the late bid closes d: n3 wins it
	d, err := s.Get(ctx, "d")
	if err != nil || d.Owner != "n3" {
		t.Fatalf("d: %+v, %v", d, err)
	}

	// n3 loses d at its deadline.
	ld, err := lease.Acquire(ctx, s, lease.Ref{Item: "d", Holder: "n3", Fence: d.Fence}, opts...) // renewal 3
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	if ld.ValidFor() > 0 {
		t.Fatal("d still valid past its TTL")
	}

	want := agent.MetricsSnapshot{
		AuctionsStarted: 3, AuctionsWon: 2, AuctionsNoWinner: 1,
		AuctionsShortCircuited: 1, AuctionsTimedOut: 2, ItemsStarved: 1,
		BidsPlaced: 4, BidsRejectedPending: 1, BidsRejectedTooLow: 1, BidsRejectedLeased: 1, BidsRejectedClosed: 1,
		EffectiveMaxBids: 2,
		LeasesRenewed:    3, LeasesLost: 1, LeasesReleased: 1,
	}
	if got := met.Snapshot(); got != want {
		t.Errorf("snapshot\n got %+v\nwant %+v", got, want)
	}
}
