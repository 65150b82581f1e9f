package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/store"
)

// RunRemoveRanges runs the suite's RemoveRanges case on stores made by
// newStore, for a backend whose stores support range removal only in
// some configuration (store/pebble's WithoutPopulations), which Run's
// stores may not have. Each store is closed at the end.
func RunRemoveRanges(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("RemoveRanges", func(t *testing.T) {
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		testRemoveRanges(t, s)
	})
}

// testRemoveRanges checks store.RangeRemover: the entries in the spans
// go, the others stay, records stay, and writes after it are kept. A
// store that reports errors.ErrUnsupported must have removed nothing.
func testRemoveRanges(t *testing.T, s store.Store) {
	rr, ok := s.(store.RangeRemover)
	if !ok {
		t.Skipf("%T does not implement store.RangeRemover", s)
	}
	ctx := context.Background()
	v1, v2 := value("p1", "ctx1", "md1"), value("p2", "ctx1", "md2")
	mhs := Multihashes("ranges", 5000)
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)

	before := map[string][]store.Value{}
	var header []byte
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		before[string(e.Multihash)] = e.Values
		header = e.Multihash[:2] // sha2-256's code and length, in the store's form
	}
	if len(before) != len(mhs) {
		t.Fatalf("All yields %d entries before, want %d", len(before), len(mhs))
	}
	// Put again, as a live writer would: a store that gathers writes
	// (store/pebble's sorted runs, which the scan above applied) holds
	// these when RemoveRanges comes, and must not let them land after it.
	mustPut(t, s, v1, mhs...)
	// Every multihash looked up once: a store that caches lookups holds
	// them when RemoveRanges comes, and must not answer from them after.
	for _, mh := range mhs {
		mustGet(t, s, mh)
	}
	// Two spans by the digest's first byte: [0x40, 0x80) and [0xc0, end
	// of the header). The oracle decides each form on its own bytes.
	spans := []store.Span{
		{Start: append(bytes.Clone(header), 0x40), End: append(bytes.Clone(header), 0x80)},
		{Start: append(bytes.Clone(header), 0xc0), End: []byte{header[0], header[1] + 1}},
	}
	in := func(form []byte) bool {
		k := append(bytes.Clone(form), 0)
		for _, sp := range spans {
			if bytes.Compare(k, sp.Start) >= 0 && (sp.End == nil || bytes.Compare(k, sp.End) < 0) {
				return true
			}
		}
		return false
	}

	if err := rr.RemoveRanges(ctx, store.Span{Start: spans[0].End, End: spans[0].Start}); err == nil {
		t.Fatal("RemoveRanges with a reversed span: no error")
	}
	err := rr.RemoveRanges(ctx, spans...)
	unsupported := errors.Is(err, errors.ErrUnsupported)
	if err != nil && !unsupported {
		t.Fatalf("RemoveRanges: %v", err)
	}

	removed := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if !unsupported && in(e.Multihash) {
			t.Fatalf("All yields %x, inside a removed span", []byte(e.Multihash))
		}
		if len(e.Values) != len(before[string(e.Multihash)]) {
			t.Fatalf("%x has %d values after RemoveRanges, %d before", []byte(e.Multihash), len(e.Values), len(before[string(e.Multihash)]))
		}
		delete(before, string(e.Multihash))
	}
	for form := range before {
		if unsupported || !in([]byte(form)) {
			t.Fatalf("%x is gone, outside every span (RemoveRanges returned %v)", []byte(form), err)
		}
		removed++
	}
	if unsupported {
		t.Skipf("%T: %v (and it removed nothing)", s, err)
	}
	if removed < 1000 || removed > 4000 {
		t.Fatalf("RemoveRanges removed %d of %d, want about half", removed, len(mhs))
	}
	// Get agrees with All: as many multihashes answer nothing as All
	// lost, and the others answer every value they had.
	empty := 0
	for i, mh := range mhs {
		got := mustGet(t, s, mh)
		want := 1
		if i < 100 {
			want = 2
		}
		switch len(got) {
		case 0:
			empty++
		case want:
		default:
			t.Fatalf("Get(mhs[%d]) = %s, want %d values or none", i, fmtValues(got), want)
		}
	}
	if empty != removed {
		t.Fatalf("Get answers nothing for %d multihashes, All lost %d", empty, removed)
	}
	// Writes after it are kept, the records included: the removed
	// multihashes come back when put again, with the values' metadata.
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs[:100]...)
	for i, mh := range mhs {
		if i < 100 {
			expectValues(t, s, mh, v1, v2)
		} else {
			expectValues(t, s, mh, v1)
		}
	}
}
