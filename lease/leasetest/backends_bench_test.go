package leasetest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	"github.com/indexkit/indexkit/lease/memory"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// BenchmarkBackends measures the grant and renew rates of the three lease
// backends side by side, in one run on one machine: lease/memory,
// lease/redis against the machine's Redis (REDIS_ADDR), and lease/etcd
// against a single etcd member and against a three-member cluster, all on
// 127.0.0.1 and started here (the etcd binary is required; without Redis
// the test is skipped, or fails under CI). Run it with
//
//	go test -run '^$' -bench Backends -benchtime 3s ./lease/leasetest/
//
// The figures are rates: grants/s of a bid that closes its one-bid auction
// with a grant, then the release, from 8 goroutines per core on 1024
// items; renewals/s of a single Renew of a held lease, from 8 goroutines
// per core.
func BenchmarkBackends(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) func(b *testing.B, opts ...lease.Option) lease.Store
	}{
		{"memory", func(*testing.B) func(*testing.B, ...lease.Option) lease.Store {
			return func(b *testing.B, opts ...lease.Option) lease.Store {
				s, err := memory.New(opts...)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
		}},
		{"redis", func(*testing.B) func(*testing.B, ...lease.Option) lease.Store {
			return func(b *testing.B, opts ...lease.Option) lease.Store {
				c := redistest.Client(b, redistest.Addr())
				s, err := leaseredis.New(c, redistest.Prefix(b, c, "bench"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
		}},
		{"etcd-1", etcdBackend(1)},
		{"etcd-3", etcdBackend(3)},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			newStore := be.open(b)
			b.Run("grant", func(b *testing.B) { benchGrant(b, newStore) })
			b.Run("renew", func(b *testing.B) { benchRenew(b, newStore) })
		})
	}
}

// etcdBackend starts an etcd cluster of n members for the backend's
// benchmarks; each store gets a client over every member's endpoint.
func etcdBackend(n int) func(b *testing.B) func(*testing.B, ...lease.Option) lease.Store {
	return func(b *testing.B) func(*testing.B, ...lease.Option) lease.Store {
		if etcdtest.Binary() == "" {
			etcdtest.Unavailable(b, "etcd binary not found (install etcd-server or set ETCD_BIN)")
		}
		c := etcdtest.Start(b, etcdtest.WithMembers(n))
		return func(b *testing.B, opts ...lease.Option) lease.Store {
			cli := etcdtest.Client(b, c.Endpoints()...)
			s, err := leaseetcd.New(cli, etcdtest.Prefix(b, cli, "bench"), opts...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
	}
}

const benchItems = 1024

func benchSetup(b *testing.B, newStore func(*testing.B, ...lease.Option) lease.Store) (lease.Store, []string) {
	b.Helper()
	s := newStore(b, lease.WithMaxBids(1), lease.WithTTL(time.Hour))
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	names := make([]string, benchItems)
	for i := range names {
		names[i] = fmt.Sprintf("item-%04d", i)
		if err := s.Put(ctx, lease.Item{ID: names[i]}); err != nil {
			b.Fatal(err)
		}
	}
	return s, names
}

func benchGrant(b *testing.B, newStore func(*testing.B, ...lease.Option) lease.Store) {
	s, names := benchSetup(b, newStore)
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
				continue // leased by another goroutine, or a bid pending
			}
			grants.Add(1)
			if err := s.Release(ctx, res.Result.Grant.Ref); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(grants.Load())/time.Since(start).Seconds(), "grants/s")
}

func benchRenew(b *testing.B, newStore func(*testing.B, ...lease.Option) lease.Store) {
	s, names := benchSetup(b, newStore)
	ctx := context.Background()
	refs := make([]lease.Ref, len(names))
	for i, n := range names {
		res, err := s.Bid(ctx, n, fmt.Sprintf("node-%d", i), 1)
		if err != nil || res.Result == nil || res.Result.Grant == nil {
			b.Fatalf("grant %s: %v %+v", n, err, res)
		}
		refs[i] = res.Result.Grant.Ref
	}
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer() // the setup takes seconds on etcd: keep it out of b.N's ramp
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
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
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "renewals/s")
}
