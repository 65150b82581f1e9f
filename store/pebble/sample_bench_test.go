package pebble_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store"
	ikpebble "github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

// BenchmarkSample samples 10 positions of one context of
// INDEXKIT_BENCH_KEYS (default 1,000,000) multihashes, as the sampling
// API does for max=10, on a settled store:
//
//	warm       the context unchanged since the last sample: its count and
//	           anchors are cached, each position walks at most 1024 keys
//	cold       after a Put of one multihash into the context, which
//	           invalidates them: the population is scanned again
//	raw-scan   baseline: a raw Pebble iteration over the context's
//	           population keys, what a cold sample cannot do without
//	raw-get    baseline: 10 raw point reads of index keys
func BenchmarkSample(b *testing.B) {
	ctx := context.Background()
	n := storetest.BenchKeys()
	s, err := ikpebble.Open(b.TempDir(), ikpebble.WithDigestPrefixKeys())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := store.Value{ProviderID: storetest.PeerID("bench"), ContextID: []byte("deal"), Metadata: []byte("m")}
	mhs := storetest.Multihashes("bench-sample", n)
	for i := 0; i < n; i += 10000 {
		if err := s.Put(ctx, v, mhs[i:min(i+10000, n)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := settle(s.Pebble()); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	pick := func(n int) []int {
		out := make([]int, 10)
		for i := range out {
			out[i] = r.IntN(n)
		}
		return out
	}
	sample := func(b *testing.B) {
		got, err := s.Sample(ctx, v.ProviderID, v.ContextID, pick)
		if err != nil || len(got) != 10 {
			b.Fatalf("Sample: %d, %v", len(got), err)
		}
	}
	b.Run("warm", func(b *testing.B) {
		sample(b)
		for b.Loop() {
			sample(b)
		}
	})
	b.Run("cold", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if err := s.Put(ctx, v, storetest.Multihash("bench-sample-more", i)); err != nil {
				b.Fatal(err)
			}
			i++
			sample(b)
		}
	})
	b.Run("raw-scan", func(b *testing.B) {
		// The store's first record has ID 0: its population is 0x06‖0‖...
		lower := binary.BigEndian.AppendUint64([]byte{0x06}, 0)
		upper := binary.BigEndian.AppendUint64([]byte{0x06}, 1)
		for b.Loop() {
			it, err := s.Pebble().NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
			if err != nil {
				b.Fatal(err)
			}
			k := 0
			for ok := it.First(); ok; ok = it.Next() {
				k++
			}
			it.Close()
			if k < n {
				b.Fatalf("raw scan: %d keys, want at least %d", k, n)
			}
		}
	})
	b.Run("raw-get", func(b *testing.B) {
		for b.Loop() {
			for range 10 {
				mh := mhs[r.IntN(n)]
				key := append([]byte{0x01}, store.AppendIndexKey(nil, mh)...)
				key = append(key, 0)
				_, closer, err := s.Pebble().Get(key)
				if err != nil {
					b.Fatal(fmt.Errorf("raw get: %w", err))
				}
				closer.Close()
			}
		}
	})
}
