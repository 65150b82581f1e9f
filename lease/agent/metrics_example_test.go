package agent_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/memory"
)

// A Metrics counts a store's auctions and bids; its Snapshot is a plain
// struct, ready to be served as JSON.
func ExampleMetrics() {
	ctx := context.Background()
	var met agent.Metrics
	s, err := memory.New(lease.WithMaxBids(2), lease.WithHooks(met.StoreHooks()))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if err := s.Put(ctx, lease.Item{ID: "repo-1", MinBid: 1 << 30}); err != nil {
		panic(err)
	}
	_, err = s.Bid(ctx, "repo-1", "node-a", 4<<30)
	fmt.Println(err)
	_, err = s.Bid(ctx, "repo-1", "node-b", 512<<20)
	fmt.Println(err)
	_, err = s.Bid(ctx, "repo-1", "node-c", 8<<30) // the second bid: a short circuit
	fmt.Println(err)

	m := met.Snapshot()
	fmt.Println("auctions:", m.AuctionsStarted, "won:", m.AuctionsWon, "short-circuited:", m.AuctionsShortCircuited)
	fmt.Println("bids:", m.BidsPlaced, "too low:", m.BidsRejectedTooLow, "max-bids:", m.EffectiveMaxBids)
	// Output:
	// <nil>
	// lease/memory: bid on "repo-1" by "node-b": lease: bid too low
	// <nil>
	// auctions: 1 won: 1 short-circuited: 1
	// bids: 2 too low: 1 max-bids: 2
}
