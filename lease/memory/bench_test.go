package memory_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/memory"
)

// raw is the baseline: one mutex-guarded map from item to (owner, fence,
// expiry), granting with a compare-and-set and renewing with a check, as a
// lease table without auctions would.
type raw struct {
	mu sync.Mutex
	m  map[string]*rawRow
}

type rawRow struct {
	owner  string
	fence  uint64
	expiry time.Time
}

func (r *raw) grant(item, node string, now time.Time, ttl time.Duration) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.m[item]
	if x == nil {
		x = &rawRow{}
		r.m[item] = x
	}
	if x.owner != "" && now.Before(x.expiry) {
		return 0, false
	}
	x.owner, x.expiry = node, now.Add(ttl)
	x.fence++
	return x.fence, true
}

func (r *raw) renew(item, node string, fence uint64, now time.Time, ttl time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.m[item]
	if x == nil || x.owner != node || x.fence != fence || !now.Before(x.expiry) {
		return false
	}
	x.expiry = now.Add(ttl)
	return true
}

func (r *raw) release(item, node string, fence uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x := r.m[item]; x != nil && x.owner == node && x.fence == fence {
		x.owner = ""
	}
}

const benchItems = 1024

func benchStore(b *testing.B) *memory.Store {
	s, err := memory.New(lease.WithMaxBids(1))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range benchItems {
		if err := s.Put(ctx, lease.Item{ID: fmt.Sprintf("item-%04d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

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

// BenchmarkGrant measures a whole grant cycle from parallel goroutines: a
// bid that short-circuits its auction into a grant, then the release that
// makes the item biddable again (2 ops per iteration, reported as grants).
func BenchmarkGrant(b *testing.B) {
	names := itemNames()
	b.Run("store", func(b *testing.B) {
		s := benchStore(b)
		defer s.Close()
		var next atomic.Int64
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			node := fmt.Sprintf("node-%d", next.Add(1))
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				res, err := s.Bid(ctx, names[i%benchItems], node, 1)
				if err != nil || res.Result == nil || res.Result.Grant == nil {
					continue // leased by another goroutine
				}
				_ = s.Release(ctx, res.Result.Grant.Ref)
			}
		})
		report(b, start)
	})
	b.Run("raw", func(b *testing.B) {
		r := &raw{m: make(map[string]*rawRow)}
		var next atomic.Int64
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			node := fmt.Sprintf("node-%d", next.Add(1))
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				item := names[i%benchItems]
				if f, ok := r.grant(item, node, time.Now(), 30*time.Second); ok {
					r.release(item, node, f)
				}
			}
		})
		report(b, start)
	})
}

// BenchmarkRenew measures single renewals of held leases from parallel
// goroutines.
func BenchmarkRenew(b *testing.B) {
	names := itemNames()
	b.Run("store", func(b *testing.B) {
		s := benchStore(b)
		defer s.Close()
		ctx := context.Background()
		refs := make([]lease.Ref, benchItems)
		for i, n := range names {
			res, err := s.Bid(ctx, n, fmt.Sprintf("node-%d", i), 1)
			if err != nil {
				b.Fatal(err)
			}
			refs[i] = res.Result.Grant.Ref
		}
		var next atomic.Int64
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				rs, err := s.Renew(ctx, refs[i%benchItems])
				if err != nil || rs[0].Err != nil {
					b.Errorf("Renew: %v %v", err, rs[0].Err)
					return
				}
			}
		})
		report(b, start)
	})
	b.Run("raw", func(b *testing.B) {
		r := &raw{m: make(map[string]*rawRow)}
		fences := make([]uint64, benchItems)
		nodes := make([]string, benchItems)
		for i, n := range names {
			nodes[i] = fmt.Sprintf("node-%d", i)
			fences[i], _ = r.grant(n, nodes[i], time.Now(), time.Hour)
		}
		var next atomic.Int64
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				k := i % benchItems
				if !r.renew(names[k], nodes[k], fences[k], time.Now(), time.Hour) {
					b.Error("renew failed")
					return
				}
			}
		})
		report(b, start)
	})
}

// heldRefs grants every one of names to a node of its own.
func heldRefs(b *testing.B, s *memory.Store, names []string) []lease.Ref {
	ctx := context.Background()
	refs := make([]lease.Ref, len(names))
	for i, n := range names {
		res, err := s.Bid(ctx, n, fmt.Sprintf("node-%d", i), 1)
		if err != nil || res.Result == nil || res.Result.Grant == nil {
			b.Fatalf("grant %s: %v %+v", n, err, res)
		}
		refs[i] = res.Result.Grant.Ref
	}
	return refs
}

// BenchmarkRenewBatch500: one Renew of 500 leases, serially; ops/s counts
// renewals. The raw baseline renews the same 500 rows of the raw table.
func BenchmarkRenewBatch500(b *testing.B) {
	const batch = 500
	names := itemNames()[:batch]
	b.Run("store", func(b *testing.B) {
		s, err := memory.New(lease.WithMaxBids(1), lease.WithTTL(time.Hour))
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
		refs := heldRefs(b, s, names)
		start := time.Now()
		for b.Loop() {
			rs, err := s.Renew(ctx, refs...)
			if err != nil || rs[batch-1].Err != nil {
				b.Fatalf("Renew: %v", err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "ops/s")
	})
	b.Run("raw", func(b *testing.B) {
		r := &raw{m: make(map[string]*rawRow)}
		fences := make([]uint64, batch)
		nodes := make([]string, batch)
		for i, n := range names {
			nodes[i] = fmt.Sprintf("node-%d", i)
			fences[i], _ = r.grant(n, nodes[i], time.Now(), time.Hour)
		}
		start := time.Now()
		for b.Loop() {
			now := time.Now()
			for k, n := range names {
				if !r.renew(n, nodes[k], fences[k], now, time.Hour) {
					b.Fatal("renew failed")
				}
			}
		}
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "ops/s")
	})
}

// auctionBench places bids-1 bids in an auction whose threshold is bids
// (or, with evaluate, bids bids under no threshold, then lowers MaxBids to
// bids), and times the call that closes it: Evaluate, or the last Bid.
func auctionBench(b *testing.B, bids int, evaluate bool) {
	s, err := memory.New(lease.WithMaxBids(0), lease.WithAuctionWindow(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	threshold := bids
	if evaluate {
		threshold = 0
	}
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		if err := s.Put(ctx, lease.Item{ID: "auction", MaxBids: threshold}); err != nil {
			b.Fatal(err)
		}
		n := bids - 1
		if evaluate {
			n = bids
		}
		for i := range n {
			if _, err := s.Bid(ctx, "auction", fmt.Sprintf("bidder-%02d", i), int64(1000+i%7)); err != nil {
				b.Fatal(err)
			}
		}
		var r *lease.AuctionResult
		if evaluate {
			if err := s.Put(ctx, lease.Item{ID: "auction", MaxBids: bids}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			t0 := time.Now()
			res, err := s.Evaluate(ctx, "auction")
			lat = append(lat, time.Since(t0))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			r = &res
		} else {
			b.StartTimer()
			t0 := time.Now()
			res, err := s.Bid(ctx, "auction", "last", 1)
			lat = append(lat, time.Since(t0))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			r = res.Result
		}
		if r == nil || r.Outcome != lease.Granted || r.Bids != bids {
			b.Fatalf("auction of %d bids: %+v", bids, r)
		}
		if err := s.Release(ctx, r.Grant.Ref); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// rawAuction is the baseline of the auction benchmarks: pick the best of
// 64 (free, arrival) bids from a slice under a mutex.
func rawAuction(b *testing.B, bids int) {
	var mu sync.Mutex
	free := make([]int64, bids)
	for i := range free {
		free[i] = int64(1000 + i%7)
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		mu.Lock()
		best := -1
		for i, f := range free {
			if best < 0 || f > free[best] {
				best = i
			}
		}
		mu.Unlock()
		lat = append(lat, time.Since(t0))
		if best < 0 {
			b.Fatal("no winner")
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// BenchmarkEvaluate64: the latency of the Evaluate that closes an auction
// of 64 bids and grants the item.
func BenchmarkEvaluate64(b *testing.B) {
	b.Run("store", func(b *testing.B) { auctionBench(b, 64, true) })
	b.Run("raw", func(b *testing.B) { rawAuction(b, 64) })
}

// BenchmarkShortCircuit: the time from the last bid to a grant: the 64th
// Bid, which reaches the threshold and grants in the same call.
func BenchmarkShortCircuit(b *testing.B) {
	b.Run("store", func(b *testing.B) { auctionBench(b, 64, false) })
	b.Run("raw", func(b *testing.B) { rawAuction(b, 64) })
}
