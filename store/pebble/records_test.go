package pebble_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

// Key prefixes of the store's records, as its package doc lays them out.
const (
	prefixRecord     = 0x02
	prefixSample     = 0x04
	prefixContext    = 0x05
	prefixPopulation = 0x06
)

// field reads one uvarint-length-prefixed field.
func field(b []byte) (f, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// scanKeys calls fn for every key and value of Pebble with prefix p.
func scanKeys(db *cpebble.DB, p byte, fn func(k, v []byte) error) error {
	it, err := db.NewIter(&cpebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// checkRecordKeys checks, on the raw keys, that the context index and the
// value records name each other one to one (each record has exactly the
// context-index entry of its provider and context, and each entry names a
// record of that provider and context), that no sample of schema version 2
// is left and that population entries are well formed.
func checkRecordKeys(db *cpebble.DB) error {
	type ctxOf struct{ p, c string }
	records := map[uint64]ctxOf{}
	err := scanKeys(db, prefixRecord, func(k, v []byte) error {
		p, rest, ok := field(v)
		c, _, ok2 := field(rest)
		if len(k) != 10 || !ok || !ok2 {
			return fmt.Errorf("bad record %x = %x", k, v)
		}
		records[binary.BigEndian.Uint64(k[1:])] = ctxOf{string(p), string(c)}
		return nil
	})
	if err != nil {
		return err
	}
	indexed := map[uint64]bool{}
	err = scanKeys(db, prefixContext, func(k, v []byte) error {
		if len(k) < 3 || k[len(k)-1] != 0 || len(v) != 8 {
			return fmt.Errorf("bad context-index entry %x = %x", k, v)
		}
		p, c, ok := field(k[1 : len(k)-1])
		if !ok {
			return fmt.Errorf("bad context-index key %x", k)
		}
		id := binary.BigEndian.Uint64(v)
		r, live := records[id]
		switch {
		case !live:
			return fmt.Errorf("context-index entry of context %q names record %d, which is gone", c, id)
		case r != ctxOf{string(p), string(c)}:
			return fmt.Errorf("context-index entry of context %q names record %d, of context %q", c, id, r.c)
		case indexed[id]:
			return fmt.Errorf("record %d has two context-index entries", id)
		}
		indexed[id] = true
		return nil
	})
	if err != nil {
		return err
	}
	for id, r := range records {
		if !indexed[id] {
			return fmt.Errorf("record %d (context %q) has no context-index entry", id, r.c)
		}
	}
	if err := scanKeys(db, prefixSample, func(k, _ []byte) error {
		return fmt.Errorf("sample key %x: version 3 keeps populations, not samples", k)
	}); err != nil {
		return err
	}
	return scanKeys(db, prefixPopulation, func(k, v []byte) error {
		if len(k) < 1+8+3 || k[len(k)-1] != 0 || len(v) != 0 {
			return fmt.Errorf("bad population entry %x = %x", k, v)
		}
		return nil
	})
}

// TestDifferentialTinyRecordCache is TestDifferential's sequence (another
// seed) against a store whose record cache holds about two records, with
// the context index checked against the records after every step.
func TestDifferentialTinyRecordCache(t *testing.T) {
	var s *pebble.Store
	storetest.RunDifferential(t, storetest.DifferentialConfig{
		Open: func(dir string) (store.Store, error) {
			var err error
			s, err = pebble.Open(dir, pebble.WithCacheSize(1<<20), pebble.WithRecordCache(700))
			return s, err
		},
		Model: func() store.Store { return memory.New() },
		Seed:  20261126,
		Steps: 100,
		Chaos: func(t *testing.T, st store.Store, r *rand.Rand) (string, bool) {
			if err := st.(*pebble.Store).Pebble().Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
			return "pebble Flush", r.IntN(2) == 0
		},
		Verify: func(st store.Store) error {
			return checkRecordKeys(st.(*pebble.Store).Pebble())
		},
	})
}

// A database written before the context index (schema version 1: the same
// keys but for the index, which this emulates by deleting it, leaving
// part of it and a stale entry as a build cut short and an older version
// opening the database meanwhile could) opens: Open builds the index, and
// every operation that reads it works.
func TestOpenBuildsContextIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebble.Open(dir, pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	var vals []store.Value
	for i := range 30 {
		v := store.Value{ProviderID: storetest.PeerID(fmt.Sprint("p", i%3)), ContextID: fmt.Appendf(nil, "c%d", i), Metadata: []byte("m")}
		if err := s.Put(ctx, v, storetest.Multihashes(fmt.Sprint("build-", i), 100)...); err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	db := s.Pebble()
	var keep []byte // one entry the interrupted build had written
	if err := scanKeys(db, prefixContext, func(k, _ []byte) error {
		if keep == nil {
			keep = bytes.Clone(k)
			return nil
		}
		return db.Delete(k, cpebble.NoSync)
	}); err != nil {
		t.Fatal(err)
	}
	stale := append(append([]byte{prefixContext}, binary.AppendUvarint(nil, uint64(len(vals[0].ProviderID)))...), vals[0].ProviderID...)
	stale = append(stale, "gone\x00"...)
	if err := db.Set(stale, binary.BigEndian.AppendUint64(nil, 1<<40), cpebble.NoSync); err != nil {
		t.Fatal(err)
	}
	// Version 1 kept samples, not populations.
	if err := db.DeleteRange([]byte{prefixPopulation}, []byte{prefixPopulation + 1}, cpebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte{0, 'v', 0}, []byte{1, 2}, cpebble.Sync); err != nil { // version 1, merged layout
		t.Fatal(err)
	}
	if err := checkRecordKeys(db); err == nil {
		t.Fatal("the emulated version-1 database passes the index check")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Asked for digest-prefix keys, as a node is by default, Open keeps the
	// full-key layout the version-1 database was created with.
	if s, err = pebble.Open(dir, pebble.WithCacheSize(8<<20), pebble.WithRecordCache(700), pebble.WithDigestPrefixKeys()); err != nil {
		t.Fatalf("open of a version-1 database: %v", err)
	}
	defer s.Close()
	if err := checkRecordKeys(s.Pebble()); err != nil {
		t.Fatalf("after open: %v", err)
	}
	v, closer, err := s.Pebble().Get([]byte{0, 'v', 0})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v, []byte{3, 2}) {
		t.Fatalf("schema after open %x, want version 3, merged layout", v)
	}
	closer.Close()
	for i, v := range vals {
		mhs := storetest.Multihashes(fmt.Sprint("build-", i), 100)
		if got, err := s.Get(ctx, mhs[7]); err != nil || len(got) != 1 || !got[0].Equal(v) {
			t.Fatalf("Get of context %d: %v, %v", i, got, err)
		}
		// The full-key layout keeps whole multihashes: Open rebuilt the
		// populations from the index.
		if got, err := storetest.Population(ctx, s, v.ProviderID, v.ContextID); err != nil || len(got) != len(mhs) {
			t.Fatalf("Sample of context %d: %d multihashes, %v", i, len(got), err)
		}
		switch i % 3 {
		case 0:
			if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("m2")); err != nil {
				t.Fatal(err)
			}
			v.Metadata = []byte("m2")
			if got, err := s.Get(ctx, mhs[7]); err != nil || len(got) != 1 || !got[0].Equal(v) {
				t.Fatalf("Get of context %d after UpdateMetadata: %v, %v", i, got, err)
			}
		case 1:
			if err := s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.UpdateMetadata(ctx, vals[0].ProviderID, []byte("gone"), []byte("m")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateMetadata of the context of the stale entry: %v, want ErrNotFound", err)
	}
	if err := s.RemoveProvider(ctx, vals[2].ProviderID); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		got, err := s.Get(ctx, storetest.Multihash(fmt.Sprint("build-", i), 7))
		if want := i%3 == 0; err != nil || (len(got) == 1) != want || len(got) > 1 {
			t.Fatalf("Get of context %d (%s) at the end: %v, %v", i, v.ContextID, got, err)
		}
	}
	if err := checkRecordKeys(s.Pebble()); err != nil {
		t.Fatalf("at the end: %v", err)
	}
}

// RemoveProvider of a provider with more contexts than one batch takes
// removes them all and no other provider's.
func TestRemoveProviderManyContexts(t *testing.T) {
	ctx := context.Background()
	s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 2*4096 + 10 // kv.DefaultMaxBatch contexts per batch
	gone, kept := storetest.PeerID("gone"), storetest.PeerID("kept")
	for i := range n {
		for _, p := range []store.Value{
			{ProviderID: gone, ContextID: fmt.Appendf(nil, "deal-%d", i), Metadata: []byte("m")},
			{ProviderID: kept, ContextID: fmt.Appendf(nil, "deal-%d", i), Metadata: []byte("m")},
		} {
			if i%100 != 0 && p.ProviderID == kept {
				continue
			}
			if err := s.Put(ctx, p, storetest.Multihash("many", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.RemoveProvider(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := checkRecordKeys(s.Pebble()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		got, err := s.Get(ctx, storetest.Multihash("many", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := i%100 == 0; (len(got) == 1 && got[0].ProviderID == kept) != want || len(got) > 1 {
			t.Fatalf("Get of deal %d after RemoveProvider: %v", i, got)
		}
	}
	var left int
	if err := scanKeys(s.Pebble(), prefixContext, func(_, _ []byte) error { left++; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := (n + 99) / 100; left != want {
		t.Fatalf("%d context-index entries left, want the %d of the other provider", left, want)
	}
}

// Get of a multihash with one value whose record is cached allocates
// nothing.
func TestGetAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts do not hold under the race detector")
	}
	ctx := context.Background()
	s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c"), Metadata: []byte("m")}
	mhs := storetest.Multihashes("allocs", 10)
	if err := s.Put(ctx, v, mhs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	var i int
	allocs := testing.AllocsPerRun(1000, func() {
		got, err := s.Get(ctx, mhs[i%len(mhs)])
		if err != nil || len(got) != 1 {
			t.Fatalf("Get: %v, %v", got, err)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("Get allocates %.1f times per call, want 0", allocs)
	}
}
