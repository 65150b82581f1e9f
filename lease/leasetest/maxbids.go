package leasetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// RunMaxBidsSetter checks a store's [lease.MaxBidsSetter]: a negative
// threshold is refused with [lease.ErrInvalid]; a threshold set while the
// store runs takes effect at the next Bid or Evaluate (a lowered one closes
// an open auction with all its bids; 0 turns the short circuit off); and
// SetMaxBids may race with bids (run it under -race). The auction window
// is an hour, so only the threshold closes an auction. newStore must
// return a store that implements lease.MaxBidsSetter.
func RunMaxBidsSetter(t *testing.T, newStore Factory) {
	t.Helper()
	s := &suite{newStore: newStore, u: time.Second, real: true}
	e := s.open(t, lease.WithAuctionWindow(time.Hour), lease.WithMaxBids(3))
	ms, ok := e.s.(lease.MaxBidsSetter)
	if !ok {
		t.Fatalf("%T is no lease.MaxBidsSetter", e.s)
	}
	if err := ms.SetMaxBids(-1); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("SetMaxBids(-1) = %v, want ErrInvalid", err)
	}
	set := func(n int) {
		t.Helper()
		if err := ms.SetMaxBids(n); err != nil {
			t.Fatalf("SetMaxBids(%d): %v", n, err)
		}
	}

	// Lowered from 3 to 2 with two bids in: the next evaluation closes it.
	e.put(lease.Item{ID: "a"})
	if b := e.bid("a", "n1", 10); b.Result != nil {
		t.Fatalf("first bid under threshold 3 closed the auction: %+v", b.Result)
	}
	if b := e.bid("a", "n2", 20); b.Result != nil {
		t.Fatalf("second bid under threshold 3 closed the auction: %+v", b.Result)
	}
	if r := e.evaluate("a"); r.Outcome != lease.NotDue || r.Threshold != 3 {
		t.Fatalf("Evaluate with 2 of 3 bids: %v threshold %d, want not due, 3", r.Outcome, r.Threshold)
	}
	set(2)
	r := e.evaluate("a")
	if r.Outcome != lease.Granted || !r.ShortCircuited || r.Threshold != 2 || r.Bids != 2 || r.Grant.Holder != "n2" {
		t.Fatalf("Evaluate after SetMaxBids(2): %+v, want granted to n2 by a short circuit at 2 with 2 bids", r)
	}

	// 0: no short circuit however many bids.
	set(0)
	e.put(lease.Item{ID: "b"})
	for _, n := range []string{"n3", "n4", "n5", "n6"} {
		if b := e.bid("b", n, 10); b.Result != nil {
			t.Fatalf("bid by %s with max-bids 0 closed the auction: %+v", n, b.Result)
		}
	}
	if r := e.evaluate("b"); r.Outcome != lease.NotDue || r.Threshold != 0 {
		t.Fatalf("Evaluate with max-bids 0: %v threshold %d, want not due, 0", r.Outcome, r.Threshold)
	}

	// Raised to 1: the next bid closes its auction at once.
	set(1)
	e.put(lease.Item{ID: "c"})
	b := e.bid("c", "n7", 10)
	if b.Result == nil || b.Result.Outcome != lease.Granted || b.Result.Threshold != 1 {
		t.Fatalf("bid with max-bids 1: %+v, want granted at once at threshold 1", b.Result)
	}

	// Concurrent setters and bidders, for -race; every auction closes at
	// one of the thresholds set, 1 or 2.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 20 {
				if err := ms.SetMaxBids(1 + (i+j)%2); err != nil {
					t.Errorf("SetMaxBids: %v", err)
				}
			}
		})
		wg.Go(func() {
			id := fmt.Sprintf("x%d", i)
			if err := e.s.Put(e.ctx, lease.Item{ID: id}); err != nil {
				t.Errorf("Put: %v", err)
				return
			}
			if _, err := e.s.Bid(e.ctx, id, fmt.Sprintf("m%d", i), 10); err != nil {
				t.Errorf("Bid: %v", err)
			}
		})
	}
	wg.Wait()
	set(1)
	for i := range 4 {
		id := fmt.Sprintf("x%d", i)
		if r, err := e.s.Evaluate(e.ctx, id); err != nil || (r.Outcome != lease.Granted && r.Outcome != lease.NoAuction) {
			t.Errorf("Evaluate(%s) at threshold 1: %+v, %v; want granted, or closed already", id, r, err)
		}
		if row := e.get(id); row.Owner != fmt.Sprintf("m%d", i) {
			t.Errorf("%s owned by %q, want m%d", id, row.Owner, i)
		}
	}
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ms.SetMaxBids(2); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("SetMaxBids after Close = %v, want ErrClosed", err)
	}
}
