package pebble

import (
	"bytes"
	"context"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
)

// A block cache the size of the memtables still holds blocks: a lookup
// repeated finds what the first read in the cache. Pebble counts its
// memtables against the cache, and a node's 32 MiB cache beside 32 MiB
// memtables held nothing, so every lookup read its blocks from the files.
func TestBlockCacheBesideMemtables(t *testing.T) {
	s, err := Open(t.TempDir(), WithCacheSize(4<<20), WithMemTableSize(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c"), Metadata: []byte("md")}
	// Enough through the memtable for it to grow to its full size and be
	// flushed, and again, so that it and its spare are both reserved.
	mhs := storetest.Multihashes("cache", 300_000)
	for i := 0; i < len(mhs); i += 1000 {
		if err := s.Put(ctx, v, mhs[i:i+1000]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	// One compaction of everything, waited for: no background compaction
	// replaces the tables (and their cached blocks) between the lookups.
	if err := s.Pebble().Compact(context.Background(), []byte{0}, bytes.Repeat([]byte{0xff}, 64), true); err != nil {
		t.Fatal(err)
	}
	// A lookup that goes to the tables (the store's lookup cache would
	// answer a repeated one itself, so Pebble is asked directly), of a
	// key from the middle of them.
	it, err := s.eng.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	it.First()
	for range 150_000 {
		it.Next()
	}
	if !it.Valid() {
		t.Fatal("fewer keys than written")
	}
	k := append([]byte(nil), it.Key()...)
	it.Close()
	get := func() {
		if _, closer, err := s.eng.db.Get(k); err == nil {
			closer.Close()
		}
	}
	get()
	before := s.Pebble().Metrics().BlockCache
	get()
	after := s.Pebble().Metrics().BlockCache
	if after.Misses != before.Misses || after.Hits == before.Hits {
		t.Fatalf("a repeated lookup: %d block cache misses and %d hits, want none and some (the cache holds %d bytes)",
			after.Misses-before.Misses, after.Hits-before.Hits, after.Size)
	}
}
