package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	"github.com/indexkit/indexkit/lease/memory"
)

// With an injected clock, the window closes the auction: the bid with the
// most free memory wins, the earlier of two equal bids breaks the tie.
func Example() {
	ctx := context.Background()
	clk := leasetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(lease.WithClock(clk), lease.WithAuctionWindow(time.Minute))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	_ = s.Put(ctx, lease.Item{ID: "repo-1"})
	_, _ = s.Bid(ctx, "repo-1", "node-a", 4<<30)
	_, _ = s.Bid(ctx, "repo-1", "node-b", 4<<30)
	r, _ := s.Evaluate(ctx, "repo-1")
	fmt.Println(r.Outcome)

	clk.Advance(time.Minute)
	r, _ = s.Evaluate(ctx, "repo-1")
	fmt.Println(r.Outcome, r.Grant.Holder, r.Grant.Fence, r.TimedOut)
	// Output:
	// not due
	// granted node-a 1 true
}
