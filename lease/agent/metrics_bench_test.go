package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/memory"
)

// BenchmarkGrantMetrics is lease/memory's BenchmarkGrant store cycle (a
// bid that short-circuits into a grant, then a release) with a Metrics on the
// store's hooks, beside the same cycle with no-op hooks (the cost of
// calling hooks at all) and without hooks, the baseline.
func BenchmarkGrantMetrics(b *testing.B) {
	names := itemNames()
	for _, c := range []struct {
		name string
		opts []lease.Option
	}{
		{"metrics", []lease.Option{lease.WithHooks(new(agent.Metrics).StoreHooks())}},
		{"noop", []lease.Option{lease.WithHooks(noopHooks())}},
		{"nohooks", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := memory.New(append(c.opts, lease.WithMaxBids(1))...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for _, n := range names {
				if err := s.Put(ctx, lease.Item{ID: n}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				node := fmt.Sprintf("node-%d", next.Add(1))
				i := int(next.Add(1) * 7919)
				for pb.Next() {
					i++
					res, err := s.Bid(ctx, names[i%benchItems], node, 1)
					if err != nil || res.Result == nil || res.Result.Grant == nil {
						continue
					}
					_ = s.Release(ctx, res.Result.Grant.Ref)
				}
			})
			report(b, start)
		})
	}
}

func noopHooks() lease.Hooks {
	return lease.Hooks{
		AuctionStarted:        func(string, uint64) {},
		AuctionWon:            func(lease.AuctionResult) {},
		AuctionNoWinner:       func(lease.AuctionResult) {},
		AuctionShortCircuited: func(lease.AuctionResult) {},
		AuctionTimedOut:       func(lease.AuctionResult) {},
		ItemStarved:           func(string, int) {},
		BidPlaced:             func(string, string, int64) {},
		BidRejected:           func(string, string, error) {},
	}
}

const benchItems = 1024

func itemNames() []string {
	names := make([]string, benchItems)
	for i := range names {
		names[i] = fmt.Sprintf("item-%04d", i)
	}
	return names
}

func report(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}
