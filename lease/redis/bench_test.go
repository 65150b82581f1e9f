package redis_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// The benchmarks run against the machine's Redis (REDIS_ADDR). Each has a
// .../store variant (this package) and a .../raw variant: EVALSHA of a
// trivial script (one GET) over the same client in the same run, the
// floor a one-script-per-operation design can reach.

const benchItems = 1024

// trivial is the raw baseline's script.
var trivial = goredis.NewScript(`return redis.call('GET', KEYS[1])`)

func benchStore(b *testing.B, opts ...lease.Option) (*leaseredis.Store, *goredis.Client, []string) {
	c := redistest.Client(b, redistest.Addr())
	s, err := leaseredis.New(c, redistest.Prefix(b, c, "lease"), append([]lease.Option{lease.WithMaxBids(1)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	names := make([]string, benchItems)
	for i := range names {
		names[i] = fmt.Sprintf("item-%04d", i)
		if err := s.Put(ctx, lease.Item{ID: names[i]}); err != nil {
			b.Fatal(err)
		}
	}
	if err := trivial.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	return s, c, names
}

func report(b *testing.B, start time.Time, n int) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "ops/s")
}

func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkGrant: a grant is a bid that short-circuits its one-bid auction
// into a grant (one script), then the release that makes the item biddable
// again (a second script), from 16 goroutines per core. ops/s counts
// grants.
func BenchmarkGrant(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, _, names := benchStore(b)
		var next atomic.Int64
		var grants atomic.Int64
		b.SetParallelism(8)
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
				grants.Add(1)
				if err := s.Release(ctx, res.Result.Grant.Ref); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, start, int(grants.Load()))
	})
	b.Run("raw", rawParallel)
}

func heldRefs(b *testing.B, s *leaseredis.Store, names []string) []lease.Ref {
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

// BenchmarkRenew: single renewals of held leases, from 16 goroutines per
// core.
func BenchmarkRenew(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, _, names := benchStore(b, lease.WithTTL(time.Hour))
		refs := heldRefs(b, s, names)
		var next atomic.Int64
		b.SetParallelism(8)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				rs, err := s.Renew(ctx, refs[i%benchItems])
				if err != nil || rs[0].Err != nil {
					b.Errorf("Renew: %v %+v", err, rs)
					return
				}
			}
		})
		report(b, start, b.N)
	})
	b.Run("raw", rawParallel)
}

// BenchmarkRenewBatch500: one Renew of 500 leases (one script call),
// serially; ops/s counts renewals. The raw baseline is one EVALSHA of a
// script that GETs the same 500 keys.
func BenchmarkRenewBatch500(b *testing.B) {
	const batch = 500
	b.Run("store", func(b *testing.B) {
		s, _, names := benchStore(b, lease.WithTTL(time.Hour))
		refs := heldRefs(b, s, names[:batch])
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		for b.Loop() {
			t0 := time.Now()
			rs, err := s.Renew(ctx, refs...)
			lat = append(lat, time.Since(t0))
			if err != nil || rs[batch-1].Err != nil {
				b.Fatalf("Renew: %v", err)
			}
		}
		report(b, start, b.N*batch)
		percentiles(b, lat)
	})
	b.Run("raw", func(b *testing.B) {
		_, c, names := benchStore(b)
		many := goredis.NewScript(`local n = 0 for _, k in ipairs(KEYS) do if redis.call('GET', k) then n = n + 1 end end return n`)
		ctx := context.Background()
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		for b.Loop() {
			t0 := time.Now()
			err := many.Run(ctx, c, names[:batch]).Err()
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, start, b.N*batch)
		percentiles(b, lat)
	})
}

// BenchmarkEvaluate64: the latency of one evaluation that closes an
// auction of 64 bids and grants the item. Each iteration places 64 bids
// under no threshold, lowers the item's MaxBids to 64 (the auction becomes
// due) and times only Evaluate; the winner then releases. ops/s is
// 1/mean latency. The raw baseline times one trivial EVALSHA, serially.
func BenchmarkEvaluate64(b *testing.B) {
	const bids = 64
	b.Run("store", func(b *testing.B) {
		s, _, _ := benchStore(b, lease.WithMaxBids(0), lease.WithAuctionWindow(time.Hour))
		ctx := context.Background()
		var lat []time.Duration
		for b.Loop() {
			b.StopTimer()
			if err := s.Put(ctx, lease.Item{ID: "auction"}); err != nil {
				b.Fatal(err)
			}
			for i := range bids {
				if _, err := s.Bid(ctx, "auction", fmt.Sprintf("bidder-%02d", i), int64(1000+i%7)); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Put(ctx, lease.Item{ID: "auction", MaxBids: bids}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			t0 := time.Now()
			r, err := s.Evaluate(ctx, "auction")
			lat = append(lat, time.Since(t0))
			b.StopTimer()
			if err != nil || r.Outcome != lease.Granted || r.Bids != bids {
				b.Fatalf("Evaluate: %v %+v", err, r)
			}
			if err := s.Release(ctx, r.Grant.Ref); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		latencyReport(b, lat)
	})
	b.Run("raw", rawLatency)
}

// rawParallel is the baseline of the throughput benchmarks: trivial
// EVALSHAs over the same keys, from as many goroutines.
func rawParallel(b *testing.B) {
	_, c, names := benchStore(b)
	var next atomic.Int64
	b.SetParallelism(8)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(next.Add(1) * 7919)
		for pb.Next() {
			i++
			if err := trivial.Run(ctx, c, []string{names[i%benchItems]}).Err(); err != nil && err != goredis.Nil {
				b.Error(err)
				return
			}
		}
	})
	report(b, start, b.N)
}

// rawLatency is the baseline of the latency benchmarks: one trivial
// EVALSHA at a time, timed.
func rawLatency(b *testing.B) {
	_, c, _ := benchStore(b)
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := trivial.Run(ctx, c, []string{"item-0000"}).Err(); err != nil && err != goredis.Nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	latencyReport(b, lat)
}

func latencyReport(b *testing.B, lat []time.Duration) {
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	if sum > 0 {
		b.ReportMetric(float64(len(lat))/sum.Seconds(), "ops/s")
	}
	percentiles(b, lat)
}

// BenchmarkShortCircuit: the time from the last bid to a grant. 63 bids
// wait in an auction whose threshold is 64; the timed call is the 64th
// Bid, whose script appends the bid, finds the threshold reached and
// grants the item in the same execution, so the last bidder learns the
// outcome from its own call. The raw baseline times one trivial EVALSHA.
func BenchmarkShortCircuit(b *testing.B) {
	const bids = 64
	b.Run("store", func(b *testing.B) {
		s, _, _ := benchStore(b, lease.WithMaxBids(bids), lease.WithAuctionWindow(time.Hour))
		ctx := context.Background()
		var lat []time.Duration
		for b.Loop() {
			b.StopTimer()
			for i := range bids - 1 {
				if _, err := s.Bid(ctx, "item-0000", fmt.Sprintf("bidder-%02d", i), int64(1000+i%7)); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			t0 := time.Now()
			res, err := s.Bid(ctx, "item-0000", "last", 1)
			lat = append(lat, time.Since(t0))
			b.StopTimer()
			if err != nil || res.Result == nil || res.Result.Outcome != lease.Granted || !res.Result.ShortCircuited {
				b.Fatalf("last Bid: %v %+v", err, res)
			}
			if err := s.Release(ctx, res.Result.Grant.Ref); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		latencyReport(b, lat)
	})
	b.Run("raw", rawLatency)
}

// BenchmarkRows: listing the whole catalog of 1024 rows (lease.Lister),
// as a Manager does on every scan. ops/s counts rows. The raw baseline
// pipelines one HGETALL per row over the same client, the floor for
// reading every row.
func BenchmarkRows(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, _, names := benchStore(b)
		ctx := context.Background()
		start := time.Now()
		for b.Loop() {
			n := 0
			for _, err := range s.Rows(ctx) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != len(names) {
				b.Fatalf("%d rows, want %d", n, len(names))
			}
		}
		report(b, start, b.N*len(names))
	})
	b.Run("raw", func(b *testing.B) {
		c := redistest.Client(b, redistest.Addr())
		prefix := redistest.Prefix(b, c, "lease")
		ctx := context.Background()
		keys := make([]string, benchItems)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s{item-%04d}:row", prefix, i)
			if err := c.HSet(ctx, keys[i], "commit", "", "size", 0, "maxbids", 1, "minbid", 0, "version", 1).Err(); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		for b.Loop() {
			pipe := c.Pipeline()
			for _, k := range keys {
				pipe.HGetAll(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start, b.N*len(keys))
	})
}
