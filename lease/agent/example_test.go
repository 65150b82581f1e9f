package agent_test

import (
	"context"
	"fmt"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/memory"
)

// fixedIndexer "indexes" every item as 1 MiB and reports each Index on a
// channel.
type fixedIndexer struct{ indexed chan string }

func (x fixedIndexer) Index(_ context.Context, r lease.Row) (int64, error) {
	x.indexed <- r.ID + " at " + r.Commit
	return 1 << 20, nil
}

func (fixedIndexer) Drop(string) {}

// A Manager over a memory store claims the one item of the catalog: it
// bids its free memory, wins the auction, indexes the item and marks it
// ready; on shutdown it drains and releases it.
func Example() {
	ctx := context.Background()
	s, err := memory.New(lease.WithMaxBids(1)) // one bid closes an auction
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if err := s.Put(ctx, lease.Item{ID: "repo-1", Commit: "abc123"}); err != nil {
		panic(err)
	}

	idx := fixedIndexer{indexed: make(chan string, 1)}
	ready := make(chan struct{}, 1)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)

	// README: agent
	// The node's agent heartbeats, renews, bids, indexes and evicts; it
	// drains every lease when its context ends.
	m, err := agent.NewManager(s, "node-a",
		agent.WithIndexer(idx),
		agent.WithBudget(64<<20),
		agent.WithScanInterval(10*time.Millisecond),
		agent.WithHooks(agent.Hooks{Indexed: func(lease.Ref, int64, error) { ready <- struct{}{} }}))
	if err != nil {
		panic(err)
	}
	go func() { done <- m.Run(runCtx) }()
	// README end

	fmt.Println("indexed", <-idx.indexed)
	<-ready
	for range 100 { // the Ready mark and the charge land just after Index returns
		if r, _ := s.Get(ctx, "repo-1"); r.Ready && m.Used() == 1<<20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	row, _ := s.Get(ctx, "repo-1")
	fmt.Println(row.Owner, row.State, row.Ready, m.Used())

	stop()
	fmt.Println("run:", <-done)
	row, _ = s.Get(ctx, "repo-1")
	fmt.Println(row.State, row.Owner == "")
	// Output:
	// indexed repo-1 at abc123
	// node-a leased true 1048576
	// run: <nil>
	// idle true
}
