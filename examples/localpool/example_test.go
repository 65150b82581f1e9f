package localpool_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
)

// A whole pool in one call, as a test suite in another module starts it:
// two generated publishers that stop at their sixth ad, an assigner, two
// indexers on the memory store, a front end and a piece sampler, all in
// goroutines on 127.0.0.1. The pool checks every multihash of the
// publishers' ground truth through the front end.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, _ := os.MkdirTemp("", "pool")
	defer os.RemoveAll(dir)

	// README: pool
	p, err := localpool.Start(ctx, localpool.Config{
		Dir: dir, Publishers: 2, Indexers: 2, Store: "memory",
		Interval: 50 * time.Millisecond, Entries: 5, MaxAds: 6,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	// Wait until every publisher has published its last ad, then until
	// the front end answers every multihash of their truth in full.
	_, err = p.WaitFor(ctx, "every publisher at its last ad", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if ps.Ads < 6 {
				return false
			}
		}
		return len(s.Publishers) == 2
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	check, err := p.WaitComplete(ctx)
	fmt.Println(check.OK(), check.Complete == check.Multihashes, err)
	// README end

	fmt.Println("roles:", p.Roles())
	// Output:
	// true true <nil>
	// roles: [indexer-0 indexer-1 assigner scatter publishers piece]
}
