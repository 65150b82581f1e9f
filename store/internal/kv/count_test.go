package kv

import (
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
)

// CountEntries counts the multihashes with a live value: none in an empty
// store, each multihash once whatever its number of values, none of a
// removed context before a sweep; past its limit it says it did not count.
func TestCountEntries(t *testing.T) {
	ctx := context.Background()
	db, err := Open(newSliceEngine(), Config{Name: "test", Layout: Entries})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(want int64) {
		t.Helper()
		if n, err := db.CountEntries(ctx); err != nil || n != want {
			t.Fatalf("CountEntries = %d, %v; want %d", n, err, want)
		}
	}
	count(0)
	a := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("a")}
	b := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("b")}
	mhs := storetest.Multihashes("count", 3000)
	if err := db.Put(ctx, a, mhs...); err != nil {
		t.Fatal(err)
	}
	count(3000)
	if err := db.Put(ctx, b, mhs[:1000]...); err != nil { // a second value
		t.Fatal(err)
	}
	count(3000)
	if err := db.RemoveProviderContext(ctx, a.ProviderID, a.ContextID); err != nil {
		t.Fatal(err)
	}
	count(1000) // lazily removed: entries left in the index, not counted
	db.countLimit = 999
	if n, err := db.CountEntries(ctx); !errors.Is(err, store.ErrNotCounted) {
		t.Fatalf("CountEntries past the limit = %d, %v; want an error wrapping %v", n, err, store.ErrNotCounted)
	}
}
