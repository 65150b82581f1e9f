package lease_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/memory"
)

// Three nodes bid for a repository; the one with the most free memory wins
// the lease, indexes the repository under its fence, and drains it.
func Example() {
	ctx := context.Background()
	// README: lease
	s, err := memory.New(lease.WithMaxBids(3)) // close as soon as all 3 nodes bid
	if err != nil {
		panic(err)
	}
	defer s.Close()

	if err := s.Put(ctx, lease.Item{ID: "repo-1", Commit: "abc123"}); err != nil {
		panic(err)
	}
	var won *lease.AuctionResult
	for _, b := range []struct {
		node string
		free int64
	}{{"node-a", 2 << 30}, {"node-b", 8 << 30}, {"node-c", 4 << 30}} {
		res, err := s.Bid(ctx, "repo-1", b.node, b.free)
		if err != nil {
			panic(err)
		}
		won = res.Result
	}
	fmt.Println(won.Outcome, won.Grant.Holder, won.ShortCircuited)

	l, err := lease.Acquire(ctx, s, won.Grant.Ref)
	if err != nil {
		panic(err)
	}
	ready, size := true, int64(3<<30)
	row, err := l.Update(ctx, lease.Mutation{Ready: &ready, Size: &size})
	if err != nil {
		panic(err)
	}
	fmt.Println(row.Owner, row.State, row.Ready, row.MinBid == size)

	err = l.Drain(ctx, func(context.Context) error { return nil })
	<-l.Done()
	row, _ = s.Get(ctx, "repo-1")
	fmt.Println(err, row.State, row.Owner == "")
	// README end

	// Output:
	// granted node-b true
	// node-b leased true true
	// <nil> idle true
}
