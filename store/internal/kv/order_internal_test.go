package kv

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// orderEngine is a sliceEngine that reports index writes as order-free
// (or not) and records the index keys its batches commit, in order.
type orderEngine struct {
	*sliceEngine
	free bool
	mu   sync.Mutex
	idx  [][]byte
}

func (e *orderEngine) IndexOrderFree() bool { return e.free }
func (e *orderEngine) NewBatch() Batch      { return &orderBatch{sliceBatch{e: e.sliceEngine}, e} }

type orderBatch struct {
	sliceBatch
	e *orderEngine
}

func (b *orderBatch) Commit() error {
	b.e.mu.Lock()
	for _, o := range b.ops {
		if o.k[0] == prefixIndex {
			b.e.idx = append(b.e.idx, o.k)
		}
	}
	b.e.mu.Unlock()
	return b.sliceBatch.Commit()
}

// A batch's index entries reach an order-free engine in the order they
// were given when the record keeps no population, and sorted otherwise:
// population entries go to the engine's ordinary writes, and an engine
// that is not order-free gets every batch sorted.
func TestIndexOrder(t *testing.T) {
	ctx := context.Background()
	mhs := storetest.Multihashes("order", 300)
	slices.SortFunc(mhs, func(a, b multihash.Multihash) int { return bytes.Compare(b, a) }) // descending
	for _, c := range []struct {
		name         string
		free, noPops bool
		wantSorted   bool
	}{
		{"order-free, no populations", true, true, false},
		{"order-free, populations", true, false, true},
		{"ordered engine", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := &orderEngine{sliceEngine: newSliceEngine(), free: c.free}
			db, err := Open(eng, Config{Name: "test", Layout: Entries, MaxBatch: 100, NoPopulations: c.noPops})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c")}
			if err := db.Put(ctx, v, mhs...); err != nil {
				t.Fatal(err)
			}
			if len(eng.idx) != len(mhs) {
				t.Fatalf("%d index writes, want %d", len(eng.idx), len(mhs))
			}
			// Batches of 100: within each, the order the engine got.
			for start := 0; start < len(mhs); start += 100 {
				got := eng.idx[start : start+100]
				if sorted := slices.IsSortedFunc(got, bytes.Compare); sorted != c.wantSorted {
					t.Fatalf("batch at %d: sorted %v, want %v", start, sorted, c.wantSorted)
				}
				for i, k := range got {
					if !bytes.Contains(k, mhs[start+i]) && !c.wantSorted {
						t.Fatalf("batch at %d: write %d is not multihash %d", start, i, start+i)
					}
				}
			}
			for _, mh := range mhs {
				vs, err := db.Get(ctx, mh)
				if err != nil || len(vs) != 1 {
					t.Fatalf("Get %x: %v, %v", mh, vs, err)
				}
			}
		})
	}
}
