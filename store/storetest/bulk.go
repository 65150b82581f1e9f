package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/store"
)

// testBulkLoad checks a store's bulk path (store.BulkLoader) against the
// contract of store.BulkLoad: records at once, entries at Commit, a
// context removed in between stays removed, metadata is the latest
// written, Commit is idempotent on repeats and what it loads reads back
// through Get, All and Sample as if Put had written it.
func testBulkLoad(t *testing.T, s store.Store) {
	bl, ok := s.(store.BulkLoader)
	if !ok {
		t.Skipf("%T does not implement store.BulkLoader", s)
	}
	ctx := context.Background()
	mhs := Multihashes("bulk", 3000)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p2", "ctx1", "md2")
	gone := value("p3", "ctx1", "gone")
	live := value("p4", "ctx1", "live")
	mustPut(t, s, live, mhs[:10]...)

	load, err := bl.NewBulkLoad(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer load.Close()
	put := func(v store.Value, from, to int) {
		t.Helper()
		if err := load.Put(ctx, v, mhs[from:to]...); err != nil {
			t.Fatalf("BulkLoad.Put: %v", err)
		}
	}
	put(v1, 0, 2000)
	put(v2, 1000, 3000)
	put(v1, 0, 10) // a repeat
	put(gone, 0, 50)
	if n := load.Len(); n != 2000+2000+10+50 {
		t.Fatalf("Len = %d before Commit, want %d", n, 2000+2000+10+50)
	}
	// Entries wait for Commit.
	expectValues(t, s, mhs[1500], nil...)
	// The context removed between Put and Commit stays removed.
	if err := s.RemoveProviderContext(ctx, gone.ProviderID, gone.ContextID); err != nil {
		t.Fatal(err)
	}
	// The latest metadata written wins, by either path.
	v2b := v2
	v2b.Metadata = []byte("md2-live")
	if err := s.UpdateMetadata(ctx, v2.ProviderID, v2.ContextID, v2b.Metadata); err != nil {
		t.Fatal(err)
	}
	commit := func() {
		t.Helper()
		tb := load.Seal()
		defer tb.Close()
		if err := tb.Build(ctx); err != nil {
			t.Fatalf("Build: %v", err)
		}
		if err := tb.Ingest(ctx); err != nil {
			t.Fatalf("Ingest: %v", err)
		}
	}
	commit()
	if n := load.Len(); n != 0 {
		t.Fatalf("Len = %d after Seal", n)
	}
	expectValues(t, s, mhs[0], v1, live)
	expectValues(t, s, mhs[500], v1)
	expectValues(t, s, mhs[1500], v1, v2b)
	expectValues(t, s, mhs[2500], v2b)

	// A second round in the same load: a repeat changes nothing, a new
	// metadata replaces the context's.
	v1b := v1
	v1b.Metadata = []byte("md1-new")
	put(v1b, 0, 100)
	commit()
	commit() // empty
	expectValues(t, s, mhs[1500], v1b, v2b)

	// A table closed without Ingest shows nothing; one built while the
	// load gathers the next is ingested after it.
	put(v1b, 2000, 2100)
	dropped := load.Seal()
	if dropped.Len() != 100 {
		t.Fatalf("sealed table Len = %d, want 100", dropped.Len())
	}
	if err := dropped.Build(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dropped.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dropped.Ingest(ctx); err == nil {
		t.Fatal("Ingest of a closed table succeeded")
	}
	expectValues(t, s, mhs[2050], v2b)
	put(v1b, 2100, 2200)
	first := load.Seal()
	put(v1b, 2200, 2300)
	if err := first.Build(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Ingest(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close()
	commit()
	expectValues(t, s, mhs[2150], v1b, v2b)
	expectValues(t, s, mhs[2250], v1b, v2b)
	// The contract's warning: an Ingest is newer than a Remove that
	// returned after the Put.
	put(v1b, 2300, 2301)
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[2300]); err != nil {
		t.Fatal(err)
	}
	commit()
	expectValues(t, s, mhs[2300], v1b, v2b)
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[2100:2301]...); err != nil {
		t.Fatal(err)
	}

	// What was loaded is removed as what was put.
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[5]); err != nil {
		t.Fatal(err)
	}
	expectValues(t, s, mhs[5], live)

	n := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		n += len(e.Values)
	}
	if want := 1999 + 2000 + 10; n != want {
		t.Fatalf("All yields %d values, want %d", n, want)
	}
	if sp, ok := s.(store.Sampler); ok {
		got, err := Population(ctx, sp, v2.ProviderID, v2.ContextID)
		switch {
		case errors.Is(err, store.ErrNotSampled):
		case err != nil:
			t.Fatalf("Sample: %v", err)
		case !slices.Equal(keysOf(got), keysOf(sortedSet(mhs[1000:3000]))):
			t.Fatalf("Sample of a loaded context: %d multihashes, want the 2000 loaded", len(got))
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := load.Close(); err != nil {
		t.Fatal(err)
	}
	if err := load.Put(ctx, v1, mhs[0]); err == nil {
		t.Fatal("Put on a closed load succeeded")
	}
}

func keysOf[T ~[]byte](mhs []T) []string {
	out := make([]string, len(mhs))
	for i, mh := range mhs {
		out[i] = string(mh)
	}
	return out
}
