package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
)

// The benchmarks run against the package's single-member etcd. Each has a
// .../store variant and a .../raw variant: a plain Put over the same
// client in the same run, one raft round trip, the floor of any write.

const benchItems = 1024

func benchStore(b *testing.B, opts ...lease.Option) (*leaseetcd.Store, *clientv3.Client, string, []string) {
	cli := client(b)
	prefix := etcdtest.Prefix(b, cli, "bench")
	s, err := leaseetcd.New(cli, prefix, append([]lease.Option{lease.WithMaxBids(1)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() }) // ends its keep-alive streams
	ctx := context.Background()
	names := make([]string, benchItems)
	for i := range names {
		names[i] = fmt.Sprintf("item-%04d", i)
		if err := s.Put(ctx, lease.Item{ID: names[i]}); err != nil {
			b.Fatal(err)
		}
	}
	return s, cli, prefix, names
}

func report(b *testing.B, start time.Time, n int) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkGrant: a bid that short-circuits its one-bid auction into a
// grant, then the release, from 8 goroutines per core. ops/s counts grants.
func BenchmarkGrant(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, _, _, names := benchStore(b)
		var next, grants atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer() // the setup takes seconds on etcd: keep it out of b.N's ramp
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			node := fmt.Sprintf("node-%d", next.Add(1))
			i := int(next.Add(1) * 7919)
			for pb.Next() {
				i++
				res, err := s.Bid(ctx, names[i%benchItems], node, 1)
				if err != nil || res.Result == nil || res.Result.Grant == nil {
					continue
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

func heldRefs(b *testing.B, s *leaseetcd.Store, names []string) []lease.Ref {
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

// BenchmarkRenew: single renewals of held leases, from 8 goroutines per
// core.
func BenchmarkRenew(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, _, _, names := benchStore(b, lease.WithTTL(time.Hour))
		refs := heldRefs(b, s, names)
		var next atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer() // the setup takes seconds on etcd: keep it out of b.N's ramp
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

// BenchmarkRenewBatch500: one Renew of 500 leases, serially; ops/s counts
// renewals. "expiry" writes each lease's expiry (the default);
// "without-row-expiry" (lease.WithoutRowExpiry) reads the owner keys and
// writes nothing.
func BenchmarkRenewBatch500(b *testing.B) {
	const batch = 500
	for _, c := range []struct {
		name string
		opts []lease.Option
	}{
		{"expiry", []lease.Option{lease.WithTTL(time.Hour)}},
		{"without-row-expiry", []lease.Option{lease.WithTTL(time.Hour), lease.WithoutRowExpiry()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, _, _, names := benchStore(b, c.opts...)
			refs := heldRefs(b, s, names[:batch])
			ctx := context.Background()
			start := time.Now()
			for b.Loop() {
				rs, err := s.Renew(ctx, refs...)
				if err != nil || rs[batch-1].Err != nil {
					b.Fatalf("Renew: %v", err)
				}
			}
			report(b, start, b.N*batch)
		})
	}
}

// rawParallel is the baseline: plain Puts over the same client, from as
// many goroutines.
func rawParallel(b *testing.B) {
	_, cli, prefix, names := benchStore(b)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer() // the setup takes seconds on etcd: keep it out of b.N's ramp
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(next.Add(1) * 7919)
		for pb.Next() {
			i++
			if _, err := cli.Put(ctx, prefix+"raw/"+names[i%benchItems], "x"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	report(b, start, b.N)
}
