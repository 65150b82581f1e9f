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
	"github.com/multiformats/go-multihash"
)

const benchBatch = 1024

var benchSizes = []int{1 << 20, 10 << 20}

// benchMhs returns n distinct sha2-256 multihashes (the digests are
// pseudo-random, not real hashes, to keep generation cheap).
func benchMhs(n int) []multihash.Multihash {
	buf := make([]byte, n*34)
	r := rand.New(rand.NewPCG(1, 2))
	mhs := make([]multihash.Multihash, n)
	for i := range mhs {
		mh := buf[i*34 : (i+1)*34 : (i+1)*34]
		mh[0], mh[1] = 0x12, 0x20
		for j := 2; j < 34; j += 8 {
			binary.LittleEndian.PutUint64(mh[j:], r.Uint64())
		}
		mhs[i] = mh
	}
	return mhs
}

var benchMhCache = map[int][]multihash.Multihash{}

func cachedMhs(n int) []multihash.Multihash {
	if m, ok := benchMhCache[n]; ok {
		return m
	}
	m := benchMhs(n)
	benchMhCache[n] = m
	return m
}

var benchValue = store.Value{
	ProviderID: "12D3KooWbench-provider-id-0000000000000000",
	ContextID:  []byte("context"),
	Metadata:   []byte("metadata-bitswap"),
}

// lockedMap is the baseline: a mutex-guarded map with the same batching.
type lockedMap struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (l *lockedMap) put(v []byte, mhs []multihash.Multihash) {
	l.mu.Lock()
	for _, mh := range mhs {
		l.m[string(mh)] = v
	}
	l.mu.Unlock()
}

func (l *lockedMap) get(mh multihash.Multihash) []byte {
	l.mu.RLock()
	v := l.m[string(mh)]
	l.mu.RUnlock()
	return v
}

func BenchmarkInsert(b *testing.B) {
	for _, n := range benchSizes {
		mhs := cachedMhs(n)
		b.Run(fmt.Sprintf("map/%d", n), func(b *testing.B) {
			for b.Loop() {
				l := &lockedMap{m: make(map[string][]byte)}
				v := benchValue.Metadata
				for i := 0; i < n; i += benchBatch {
					l.put(v, mhs[i:min(i+benchBatch, n)])
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "mh/s")
		})
		b.Run(fmt.Sprintf("memory/%d", n), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				s := memory.New()
				for i := 0; i < n; i += benchBatch {
					if err := s.Put(ctx, benchValue, mhs[i:min(i+benchBatch, n)]...); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "mh/s")
		})
	}
}

func BenchmarkGet(b *testing.B) {
	n := benchSizes[0]
	mhs := cachedMhs(n)
	b.Run("map", func(b *testing.B) {
		l := &lockedMap{m: make(map[string][]byte)}
		for i := 0; i < n; i += benchBatch {
			l.put(benchValue.Metadata, mhs[i:min(i+benchBatch, n)])
		}
		i := 0
		for b.Loop() {
			if l.get(mhs[i]) == nil {
				b.Fatal("missing")
			}
			i = (i + 7919) % n
		}
	})
	b.Run("memory", func(b *testing.B) {
		ctx := context.Background()
		s := memory.New()
		defer s.Close()
		for i := 0; i < n; i += benchBatch {
			if err := s.Put(ctx, benchValue, mhs[i:min(i+benchBatch, n)]...); err != nil {
				b.Fatal(err)
			}
		}
		i := 0
		for b.Loop() {
			vs, err := s.Get(ctx, mhs[i])
			if err != nil || len(vs) != 1 {
				b.Fatal(vs, err)
			}
			i = (i + 7919) % n
		}
	})
	b.Run("memory-parallel", func(b *testing.B) {
		ctx := context.Background()
		s := memory.New()
		defer s.Close()
		for i := 0; i < n; i += benchBatch {
			if err := s.Put(ctx, benchValue, mhs[i:min(i+benchBatch, n)]...); err != nil {
				b.Fatal(err)
			}
		}
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(n)
			for pb.Next() {
				vs, err := s.Get(ctx, mhs[i])
				if err != nil || len(vs) != 1 {
					b.Fatal(vs, err)
				}
				i = (i + 7919) % n
			}
		})
	})
}
