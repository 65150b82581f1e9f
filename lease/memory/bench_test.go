package memory_test

import (
	"context"
	"fmt"
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
