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

// sliceEngine is an ordered in-memory Engine: sorted keys in a slice,
// enough for a few thousand keys in a test.
type sliceEngine struct {
	mu   sync.RWMutex
	keys [][]byte
	vals map[string][]byte
}

func newSliceEngine() *sliceEngine { return &sliceEngine{vals: map[string][]byte{}} }

func (e *sliceEngine) NewBatch() Batch { return &sliceBatch{e: e} }

func (e *sliceEngine) Get(key []byte, fn func([]byte) error) error {
	e.mu.RLock()
	v, ok := e.vals[string(key)]
	e.mu.RUnlock()
	if !ok {
		return ErrNotFound
	}
	return fn(v)
}

func (e *sliceEngine) Scan(lower, upper []byte, fn func(k, v []byte) error) error {
	e.mu.RLock()
	i, _ := slices.BinarySearchFunc(e.keys, lower, bytes.Compare)
	var ks, vs [][]byte
	for ; i < len(e.keys) && (upper == nil || bytes.Compare(e.keys[i], upper) < 0); i++ {
		ks, vs = append(ks, e.keys[i]), append(vs, e.vals[string(e.keys[i])])
	}
	e.mu.RUnlock()
	for i := range ks {
		if err := fn(ks[i], vs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (e *sliceEngine) ScanPrefix(p []byte, fn func(k, v []byte) error) error {
	return e.Scan(p, prefixEnd(p), fn)
}

func (e *sliceEngine) Sync() error               { return nil }
func (e *sliceEngine) DiskUsage() (int64, error) { return 0, nil }
func (e *sliceEngine) Close() error              { return nil }
func (b *sliceBatch) Len() int                   { return len(b.ops) }
func (b *sliceBatch) Close() error               { return nil }
func (b *sliceBatch) Set(k, v []byte) error      { return b.op(k, v, false) }
func (b *sliceBatch) Delete(k []byte) error      { return b.op(k, nil, true) }
func (b *sliceBatch) op(k, v []byte, d bool) error {
	b.ops = append(b.ops, sliceOp{bytes.Clone(k), bytes.Clone(v), d})
	return nil
}

type sliceOp struct {
	k, v []byte
	del  bool
}

type sliceBatch struct {
	e   *sliceEngine
	ops []sliceOp
}

func (b *sliceBatch) Commit() error {
	e := b.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range b.ops {
		i, found := slices.BinarySearchFunc(e.keys, o.k, bytes.Compare)
		switch {
		case o.del && found:
			e.keys = slices.Delete(e.keys, i, i+1)
			delete(e.vals, string(o.k))
		case !o.del:
			if !found {
				e.keys = slices.Insert(e.keys, i, o.k)
			}
			e.vals[string(o.k)] = o.v
		}
	}
	return nil
}

// Sample scans a population once, answers from its cached count and
// anchors while it does not change, and scans it again, once, after it
// changed: the cache takes the new count in place of the stale one.
func TestSampleCache(t *testing.T) {
	ctx := context.Background()
	db, err := Open(newSliceEngine(), Config{Name: "test", Layout: Entries})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c")}
	mhs := storetest.Multihashes("cache", 3000)
	if err := db.Put(ctx, v, mhs...); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(mhs)
	slices.SortFunc(sorted, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	at := []int{2999, 0, 1023, 1024, 2048, 5}
	check := func(n int, scans int64) {
		t.Helper()
		var seen int
		got, err := db.Sample(ctx, v.ProviderID, v.ContextID, func(c int) []int { seen = c; return at })
		if err != nil || seen != n {
			t.Fatalf("Sample: count %d, %v; want %d", seen, err, n)
		}
		for i, p := range at {
			if !bytes.Equal(got[i], sorted[p]) {
				t.Fatalf("position %d: %x, want %x", p, got[i], sorted[p])
			}
		}
		if s := db.scans.Load(); s != scans {
			t.Fatalf("%d population scans, want %d", s, scans)
		}
	}
	check(3000, 1)
	check(3000, 1)
	more := storetest.Multihash("cache-more", 0)
	if err := db.Put(ctx, v, more); err != nil {
		t.Fatal(err)
	}
	i, _ := slices.BinarySearchFunc(sorted, more, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	sorted = slices.Insert(sorted, i, more)
	check(3001, 2)
	check(3001, 2)
}
