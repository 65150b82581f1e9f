package storetest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/store"
)

// BenchGetParallel is BenchGet with lookups from GOMAXPROCS goroutines at
// once (b.RunParallel), each walking the lookup sequence from its own
// offset: what a node serving many find clients does.
func BenchGetParallel(b *testing.B, open func(b *testing.B) store.Store) {
	ctx := context.Background()
	s := open(b)
	defer s.Close()
	mhs, batchOf := loadGetStore(b, s)
	var worker atomic.Int64
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1)) * 7919
		for pb.Next() {
			k := i % len(mhs)
			vals, err := s.Get(ctx, mhs[k])
			if err != nil {
				b.Error(err)
				return
			}
			if (len(vals) == 1) != (batchOf[k] >= 0) {
				b.Errorf("lookup %d: %d values, hit=%v", k, len(vals), batchOf[k] >= 0)
				return
			}
			i++
		}
	})
	m.report(b, b.N, "gets/s", "cpu-s/Mget")
}

// BenchRawGetParallel is BenchGetParallel for a raw engine.
func BenchRawGetParallel(b *testing.B, open func(b *testing.B) Raw) {
	r := open(b)
	defer r.Close()
	mhs, batchOf := loadGetRaw(b, r)
	var worker atomic.Int64
	b.ResetTimer()
	m := startMeter()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1)) * 7919
		for pb.Next() {
			k := i % len(mhs)
			found, err := r.Get(mhs[k], uint64(max(batchOf[k], 0)))
			if err != nil {
				b.Error(err)
				return
			}
			if found != (batchOf[k] >= 0) {
				b.Errorf("raw lookup %d: found=%v", k, found)
				return
			}
			i++
		}
	})
	m.report(b, b.N, "gets/s", "cpu-s/Mget")
}

// CompareGetParallel runs BenchGetParallel and BenchRawGetParallel side by
// side, as store and raw.
func CompareGetParallel(b *testing.B, open func(*testing.B) store.Store, raw func(*testing.B) Raw) {
	b.Run("store", func(b *testing.B) { BenchGetParallel(b, open) })
	b.Run("raw", func(b *testing.B) { BenchRawGetParallel(b, raw) })
}
