package memory_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

func openStore(*testing.B) store.Store { return memory.New() }

// raw is the baseline the memory store is measured against: one map from
// multihash bytes to the encoded record ID, guarded by one mutex, taken once
// per written batch and once per lookup.
type raw struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func openRaw(*testing.B) storetest.Raw { return newRaw() }

func newRaw() *raw { return &raw{m: make(map[string][]byte)} }

func (r *raw) Write(mhs []multihash.Multihash, id uint64) error {
	v := binary.BigEndian.AppendUint64(nil, id)
	r.mu.Lock()
	for _, mh := range mhs {
		r.m[string(mh)] = v
	}
	r.mu.Unlock()
	return nil
}

func (r *raw) Get(mh multihash.Multihash, _ uint64) (bool, error) {
	r.mu.RLock()
	_, ok := r.m[string(mh)]
	r.mu.RUnlock()
	return ok, nil
}

func (r *raw) Sync() error          { return nil }
func (r *raw) Settle() error        { return nil }
func (r *raw) Size() (int64, error) { return 0, nil }

func (r *raw) Close() error {
	r.mu.Lock()
	r.m = nil
	r.mu.Unlock()
	return nil
}

func BenchmarkPut(b *testing.B) { storetest.ComparePut(b, openStore, openRaw) }

func BenchmarkGet(b *testing.B) { storetest.CompareGet(b, openStore, openRaw) }

// BenchmarkUpdateMetadata pairs each context size with the raw floor of an
// update, a one-key commit, which does not depend on the size.
func BenchmarkUpdateMetadata(b *testing.B) { storetest.CompareUpdateMetadata(b, openStore, openRaw) }

// BenchmarkGetParallel measures what the shared harness does not: lookups
// from GOMAXPROCS goroutines at once (hits only), where the store's sharded
// locks meet the baseline's single lock. It is its own Op, so its rows pair
// with each other and not with BenchmarkGet.
func BenchmarkGetParallel(b *testing.B) {
	mhs := parallelMhs(storetest.BenchKeys())
	const batch = 1000
	b.Run("store", func(b *testing.B) {
		ctx := context.Background()
		s := memory.New()
		defer s.Close()
		for i := 0; i < len(mhs); i += batch {
			v := store.Value{
				ProviderID: storetest.PeerID("bench"),
				ContextID:  fmt.Appendf(nil, "context-%08d", i/batch),
				Metadata:   []byte("metadata"),
			}
			if err := s.Put(ctx, v, mhs[i:min(i+batch, len(mhs))]...); err != nil {
				b.Fatal(err)
			}
		}
		runParallelGets(b, func(mh multihash.Multihash) bool {
			vs, err := s.Get(ctx, mh)
			return err == nil && len(vs) == 1
		})
	})
	b.Run("raw", func(b *testing.B) {
		r := newRaw()
		for i := 0; i < len(mhs); i += batch {
			if err := r.Write(mhs[i:min(i+batch, len(mhs))], uint64(i/batch)); err != nil {
				b.Fatal(err)
			}
		}
		runParallelGets(b, func(mh multihash.Multihash) bool {
			ok, err := r.Get(mh, 0)
			return err == nil && ok
		})
	})
}

var parallelCache = map[int][]multihash.Multihash{}

// parallelMhs returns n distinct sha2-256 multihashes with pseudo-random
// digests.
func parallelMhs(n int) []multihash.Multihash {
	if m, ok := parallelCache[n]; ok {
		return m
	}
	buf := make([]byte, n*34)
	r := rand.New(rand.NewPCG(1, 2))
	mhs := make([]multihash.Multihash, n)
	for i := range mhs {
		mh := buf[i*34 : (i+1)*34 : (i+1)*34]
		mh[0], mh[1] = 0x12, 0x20
		for j := 2; j < 34; j += 8 {
			v := r.Uint64()
			for k := 0; k < 8 && j+k < 34; k++ {
				mh[j+k] = byte(v >> (8 * k))
			}
		}
		mhs[i] = mh
	}
	parallelCache[n] = mhs
	return mhs
}

// runParallelGets runs b.N lookups of mhs spread over GOMAXPROCS goroutines,
// each walking its own pseudo-random sequence, and reports gets/s.
func runParallelGets(b *testing.B, get func(multihash.Multihash) bool) {
	mhs := parallelMhs(storetest.BenchKeys())
	n := len(mhs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(n)
		for pb.Next() {
			if !get(mhs[i]) {
				b.Error("lookup missed a stored multihash")
				return
			}
			i = (i + 7919) % n
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
