package storetest

// Subtests of All, Sweep and Size.

import (
	"context"
	"testing"

	"github.com/indexkit/indexkit/store"
)

func testAll(t *testing.T, s store.Store) {
	ctx := context.Background()
	// More entries than one read chunk of the disk backends.
	mhs := Multihashes("all", 2500)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p2", "ctx1", "md2")
	gone := value("p3", "ctx1", "gone")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)
	mustPut(t, s, gone, Multihashes("all-gone", 50)...)
	if err := s.RemoveProviderContext(ctx, gone.ProviderID, gone.ContextID); err != nil {
		t.Fatal(err)
	}
	// Compared by store.IndexKey: a store keyed on digest prefixes yields
	// that form.
	want := map[string]int{}
	for i, mh := range mhs {
		want[string(store.IndexKey(mh))] = 1
		if i < 100 {
			want[string(store.IndexKey(mh))] = 2
		}
	}
	n := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		w, ok := want[string(store.IndexKey(e.Multihash))]
		if !ok && len(e.Values) == 1 && string(e.Values[0].ContextID) == "during" {
			continue // written by this loop; may or may not be seen
		}
		if !ok {
			t.Fatalf("All yielded unexpected multihash %s with %s", e.Multihash.B58String(), fmtValues(e.Values))
		}
		if len(e.Values) != w {
			t.Fatalf("All yielded %s with %d values, want %d", e.Multihash.B58String(), len(e.Values), w)
		}
		delete(want, string(store.IndexKey(e.Multihash)))
		n++
		// The loop body may call the store.
		if n%500 == 0 {
			mustPut(t, s, value("p4", "during", "md"), Multihash("during", n))
			if _, err := s.Get(ctx, e.Multihash); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(want) != 0 {
		t.Fatalf("All missed %d of %d multihashes", len(want), len(mhs))
	}
	// Breaking out early is allowed.
	for _, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
}

func testSweep(t *testing.T, s store.Store) {
	sw, ok := s.(store.Sweeper)
	if !ok {
		t.Skip("store does not implement store.Sweeper")
	}
	ctx := context.Background()
	mhs := Multihashes("sweep", 300)
	v1, v2 := value("p1", "ctx1", "md1"), value("p2", "ctx1", "md2")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)
	if err := s.RemoveProviderContext(ctx, v1.ProviderID, v1.ContextID); err != nil {
		t.Fatal(err)
	}
	n, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != int64(len(mhs)) {
		t.Fatalf("Sweep removed %d entries, want %d", n, len(mhs))
	}
	if n, err = sw.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0, nil", n, err)
	}
	expectValues(t, s, mhs[0], v2)
	expectValues(t, s, mhs[200])
	mustPut(t, s, v1, mhs[200])
	expectValues(t, s, mhs[200], v1)
}

func testSize(t *testing.T, s store.Store) {
	ctx := context.Background()
	mustPut(t, s, value("p1", "ctx1", "md1"), Multihashes("size", 5000)...)
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	n, err := s.Size(ctx)
	if err != nil {
		t.Fatalf("Size: %v", err)
	}
	if n <= 0 {
		t.Fatalf("Size after 5000 puts = %d, want > 0", n)
	}
}
