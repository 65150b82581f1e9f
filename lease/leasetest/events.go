package leasetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/lease"
)

func testStarvation(t *testing.T, s *suite) {
	var starved atomic.Int32
	e := s.open(t, lease.WithHooks(lease.Hooks{ItemStarved: func(string, int) { starved.Add(1) }}))
	for i := 1; i <= starveN; i++ {
		e.put(lease.Item{ID: "a", MinBid: 10})
		e.bid("a", "n1", 10)
		e.put(lease.Item{ID: "a", MinBid: 1000}) // now nobody qualifies
		e.advancePast(windowU)
		r := e.evaluate("a")
		if r.Outcome != lease.NoWinner || r.Unleased != i || r.Starved != (i >= starveN) {
			t.Fatalf("auction %d: %+v", i, r)
		}
		if row := e.get("a"); row.Unleased != i {
			t.Fatalf("auction %d: row %+v", i, row)
		}
	}
	if starved.Load() != 1 {
		t.Fatalf("ItemStarved called %d times", starved.Load())
	}
	e.put(lease.Item{ID: "a"})
	e.grant("a", "n1")
	if row := e.get("a"); row.Unleased != 0 {
		t.Fatalf("a grant left Unleased at %d", row.Unleased)
	}
}

func testHooks(t *testing.T, s *suite) {
	var mu sync.Mutex
	got := map[string]int{}
	inc := func(k string) { mu.Lock(); got[k]++; mu.Unlock() }
	h := lease.Hooks{
		AuctionStarted:        func(string, uint64) { inc("started") },
		AuctionWon:            func(lease.AuctionResult) { inc("won") },
		AuctionNoWinner:       func(lease.AuctionResult) { inc("nowinner") },
		AuctionShortCircuited: func(lease.AuctionResult) { inc("short") },
		AuctionTimedOut:       func(lease.AuctionResult) { inc("timedout") },
		BidPlaced:             func(string, string, int64) { inc("placed") },
		BidRejected: func(_, _ string, reason error) {
			for _, r := range []error{lease.ErrBidPending, lease.ErrBidTooLow, lease.ErrLeased, lease.ErrAuctionClosed} {
				if errors.Is(reason, r) {
					inc("rejected:" + r.Error())
				}
			}
		},
	}
	e := s.open(t, lease.WithHooks(h))
	e.put(lease.Item{ID: "a", MaxBids: 2, MinBid: 5})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 5)
	e.bidErr("b", "n1", 5, lease.ErrBidPending)
	e.bidErr("a", "n2", 4, lease.ErrBidTooLow)
	e.bid("a", "n2", 6) // short circuit
	e.bidErr("a", "n3", 6, lease.ErrLeased)
	e.bid("b", "n3", 1)
	e.advancePast(windowU)
	e.evaluate("b")
	want := map[string]int{
		"started": 2, "won": 2, "short": 1, "timedout": 1, "placed": 3,
		"rejected:lease: bid pending": 1, "rejected:lease: bid too low": 1, "rejected:lease: leased": 1,
	}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("hook %s: %d calls, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
