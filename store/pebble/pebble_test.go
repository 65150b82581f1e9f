package pebble_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// README: conformance-persistent
func TestConformance(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithCacheSize(8<<20))
	})
}

// README end

// The variants below run what their options change, once each: the full
// persistent suite (with its crash child) runs in TestConformance on the
// defaults and in TestConformanceSortedRuns, whose runs change what reaches
// the disk and when.

// The suite again with a record cache of about two records, so that nearly
// every lookup of a record or context reads it from Pebble, and reopened
// (a cold cache). The cache holds nothing the disk does not, so the crash
// test adds nothing here.
func TestConformanceTinyRecordCache(t *testing.T) {
	open := func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithCacheSize(8<<20), pebble.WithRecordCache(700))
	}
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, open) })
	storetest.RunReopen(t, open)
}

// mustOpen opens a store in a temporary directory of t.
func mustOpen(t *testing.T, open func(dir string) (store.Store, error)) store.Store {
	t.Helper()
	s, err := open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// And with no record cache at all.
func TestConformanceNoRecordCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20), pebble.WithRecordCache(0))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// The conformance suite with keys on digest prefixes (its multihashes are
// sha2-256), and reopened. The crash test with these keys runs in
// TestConformanceSortedRuns, whose stores use them too.
func TestConformanceDigestPrefixKeys(t *testing.T) {
	open := func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithDigestPrefixKeys(), pebble.WithCacheSize(8<<20))
	}
	storetest.Run(t, func(t *testing.T) store.Store { return mustOpen(t, open) })
	storetest.RunReopen(t, open)
}

// The conformance suite with sorted runs: runs so small that nearly every
// Put fills one, each applied as an ingested table or a batch; and runs so
// large that everything stays in them until a Flush, Sweep or scan, so
// that every read goes through them.
func TestConformanceSortedRuns(t *testing.T) {
	for _, n := range []int64{4 << 10, 64 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			storetest.RunPersistent(t, func(dir string) (store.Store, error) {
				return pebble.Open(dir, pebble.WithSortedRuns(n), pebble.WithDigestPrefixKeys(), pebble.WithCacheSize(8<<20))
			})
		})
	}
}

// The conformance suite with compactions granted by the store's own
// scheduler (WithCompactionThreads), small memtables so that it compacts.
func TestConformanceCompactionThreads(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithCompactionThreads(func() {}), pebble.WithMemTableSize(pebble.MinMemTableSize))
	})
}

// A multihash whose values are all removed leaves no key behind once swept,
// whether its list was emptied by Remove or by removing its context.
func TestSweepPrunesEmptiedKeys(t *testing.T) {
	ctx := context.Background()
	s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := storetest.PeerID("p")
	a, b := storetest.Multihashes("prune-a", 50), storetest.Multihashes("prune-b", 50)
	keep := storetest.Multihash("prune-keep", 0)
	for _, v := range []store.Value{
		{ProviderID: p, ContextID: []byte("a"), Metadata: []byte("m")},
		{ProviderID: p, ContextID: []byte("b"), Metadata: []byte("m")},
	} {
		mhs := a
		if string(v.ContextID) == "b" {
			mhs = b
		}
		if err := s.Put(ctx, v, append(mhs, keep)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(ctx, p, []byte("a"), a...); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProviderContext(ctx, p, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Pebble().Flush(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(b)+1) {
		t.Fatalf("Sweep removed %d entries, want %d", n, len(b)+1)
	}
	it, err := s.Pebble().NewIter(&cpebble.IterOptions{LowerBound: []byte{0x01}, UpperBound: []byte{0x02}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var left []string
	for ok := it.First(); ok; ok = it.Next() {
		left = append(left, fmt.Sprintf("%x", it.Key()))
	}
	if len(left) != 1 {
		t.Fatalf("%d index keys left after sweeping, want 1 (the multihash still held by context a): %v", len(left), left)
	}
	vals, err := s.Get(ctx, keep)
	if err != nil || len(vals) != 1 || string(vals[0].ContextID) != "a" {
		t.Fatalf("Get(keep) = %v, %v", vals, err)
	}
}

// A database of schema version 2, which kept a bounded sample of each
// context (0x04 keys and a hash key) instead of its population, opens as
// version 3: the samples go; with whole-multihash keys Open rebuilds every
// live context's population from the index, so Sample answers as if the
// contexts had been put now; with digest-prefix keys, which cannot give
// the whole multihashes back, the contexts stored until then report
// store.ErrNotSampled (also after a re-Put), stay found by Get, and
// contexts created afterwards are sampled.
func TestOpenBuildsPopulations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    []pebble.Option
		layout  byte
		rebuilt bool
	}{
		{"merged", nil, 2, true},
		{"digest-prefix", []pebble.Option{pebble.WithDigestPrefixKeys()}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *pebble.Store {
				t.Helper()
				s, err := pebble.Open(dir, append([]pebble.Option{pebble.WithCacheSize(8 << 20)}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open()
			v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("old"), Metadata: []byte("m")}
			gone := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("gone"), Metadata: []byte("m")}
			mhs := storetest.Multihashes("older", 5000)
			if err := s.Put(ctx, v, mhs...); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, gone, mhs[:10]...); err != nil {
				t.Fatal(err)
			}
			if err := s.RemoveProviderContext(ctx, gone.ProviderID, gone.ContextID); err != nil {
				t.Fatal(err)
			}
			// What version 2 wrote: no populations, a sample per record and
			// the sample hash key.
			db := s.Pebble()
			for _, err := range []error{
				db.DeleteRange([]byte{0x06}, []byte{0x07}, cpebble.NoSync),
				db.Delete([]byte{0, 'p', 0}, cpebble.NoSync),
				db.Set([]byte{0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0}, make([]byte, 8), cpebble.NoSync),
				db.Set([]byte{0, 's', 0}, make([]byte, 8), cpebble.NoSync),
				db.Set([]byte{0, 'v', 0}, []byte{2, tc.layout}, cpebble.Sync),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open()
			defer s.Close()
			if err := checkRecordKeys(s.Pebble()); err != nil {
				t.Fatalf("after the upgrade: %v", err)
			}
			if got, closer, err := s.Pebble().Get([]byte{0, 'v', 0}); err != nil || !bytes.Equal(got, []byte{3, tc.layout}) {
				t.Fatalf("schema after open %x, %v; want version 3", got, err)
			} else {
				closer.Close()
			}
			more := storetest.Multihashes("older-more", 3)
			for i := range 2 {
				want := len(mhs) + i*len(more)
				got, err := storetest.Population(ctx, s, v.ProviderID, v.ContextID)
				switch {
				case tc.rebuilt && (err != nil || len(got) != want):
					t.Fatalf("Sample of a context of version 2: %d multihashes, %v; want the %d rebuilt", len(got), err, want)
				case !tc.rebuilt && !errors.Is(err, store.ErrNotSampled):
					t.Fatalf("Sample of a context of version 2 in a digest-prefix store: %v, want ErrNotSampled", err)
				}
				if err := s.Put(ctx, v, more...); err != nil {
					t.Fatal(err)
				}
			}
			if vals, err := s.Get(ctx, mhs[0]); err != nil || len(vals) != 1 {
				t.Fatalf("Get: %v, %v", vals, err)
			}
			nv := store.Value{ProviderID: v.ProviderID, ContextID: []byte("new"), Metadata: []byte("m")}
			if err := s.Put(ctx, nv, mhs[:7]...); err != nil {
				t.Fatal(err)
			}
			if got, err := storetest.Population(ctx, s, nv.ProviderID, nv.ContextID); err != nil || len(got) != 7 {
				t.Fatalf("Sample of a new context: %d multihashes, %v", len(got), err)
			}
			// The population of the removed context was not rebuilt: nothing
			// is left for Sweep but the index entries.
			n := 0
			if err := scanKeys(s.Pebble(), prefixPopulation, func(k, _ []byte) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: len(mhs) + len(more) + 7, false: 7}[tc.rebuilt]; n != want {
				t.Fatalf("%d population entries, want %d", n, want)
			}
		})
	}
}

// A store opened WithoutPopulations writes no population entries and
// reports ErrNotSampled for every context; opened again with them, it
// samples the contexts created from then on, and Sweep deletes the entries
// of a context created with them and then written without.
func TestWithoutPopulations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(opts ...pebble.Option) *pebble.Store {
		t.Helper()
		s, err := pebble.Open(dir, append([]pebble.Option{pebble.WithCacheSize(8 << 20)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	count := func(s *pebble.Store) int {
		t.Helper()
		n := 0
		if err := scanKeys(s.Pebble(), prefixPopulation, func(k, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	val := func(c string) store.Value {
		return store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte(c), Metadata: []byte("m")}
	}
	sampled := func(s *pebble.Store, c string, want int) {
		t.Helper()
		got, err := storetest.Population(ctx, s, val(c).ProviderID, val(c).ContextID)
		switch {
		case want < 0 && !errors.Is(err, store.ErrNotSampled):
			t.Fatalf("Sample of %s: %d, %v; want ErrNotSampled", c, len(got), err)
		case want >= 0 && (err != nil || len(got) != want):
			t.Fatalf("Sample of %s: %d, %v; want %d", c, len(got), err, want)
		}
	}
	put := func(s *pebble.Store, c string, mhs ...multihash.Multihash) {
		t.Helper()
		if err := s.Put(ctx, val(c), mhs...); err != nil {
			t.Fatal(err)
		}
	}

	s := open()
	put(s, "kept", storetest.Multihashes("kept", 20)...)
	s.Close()

	s = open(pebble.WithoutPopulations())
	put(s, "none", storetest.Multihashes("none", 20)...)
	put(s, "kept", storetest.Multihashes("kept-more", 5)...)
	sampled(s, "none", -1)
	sampled(s, "kept", -1)
	if n := count(s); n != 20 {
		t.Fatalf("%d population entries without populations, want the 20 written before", n)
	}
	s.Close()

	s = open()
	defer s.Close()
	put(s, "new", storetest.Multihashes("new", 7)...)
	put(s, "none", storetest.Multihashes("none-more", 3)...)
	sampled(s, "new", 7)
	sampled(s, "none", -1)
	sampled(s, "kept", -1) // its population missed the 5 put meanwhile
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(s); n != 7 {
		t.Fatalf("%d population entries after Sweep, want the 7 of the context created since", n)
	}
	sampled(s, "new", 7)
}

// The layout is the one recorded at creation, whatever the options of a
// reopen; with digest prefix keys, a multihash of the first 20 bytes of
// another's sha2-256 digest shares its entry (store.AppendIndexKey), but
// removing one provider's value leaves the other's: record IDs are per
// (provider, context).
func TestDigestPrefixKeys(t *testing.T) {
	ctx := context.Background()
	full := storetest.Multihash("prefix", 0)
	encode := func(digest []byte, code uint64) multihash.Multihash {
		t.Helper()
		mh, err := multihash.Encode(digest, code)
		if err != nil {
			t.Fatal(err)
		}
		return mh
	}
	trunc := encode(full[2:22], multihash.SHA2_256)
	short := encode(full[2:12], multihash.SHA2_256) // 10 bytes: kept whole
	id := encode([]byte("an identity multihash of more than twenty bytes"), multihash.IDENTITY)
	a := store.Value{ProviderID: storetest.PeerID("a"), ContextID: []byte("c"), Metadata: []byte("ma")}
	b := store.Value{ProviderID: storetest.PeerID("b"), ContextID: []byte("c"), Metadata: []byte("mb")}
	for _, tc := range []struct {
		name          string
		create, again []pebble.Option
		prefix        bool
	}{
		{"prefix", []pebble.Option{pebble.WithDigestPrefixKeys()}, nil, true},
		{"full", nil, []pebble.Option{pebble.WithDigestPrefixKeys()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := pebble.Open(dir, append(tc.create, pebble.WithCacheSize(1<<20))...)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, a, full, short, id); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = pebble.Open(dir, append(tc.again, pebble.WithCacheSize(1<<20))...); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.DigestPrefixKeys() != tc.prefix {
				t.Fatalf("DigestPrefixKeys() = %v after reopening, want %v as created", s.DigestPrefixKeys(), tc.prefix)
			}
			if err := s.Put(ctx, b, trunc); err != nil {
				t.Fatal(err)
			}
			get := func(mh multihash.Multihash) []store.Value {
				t.Helper()
				vs, err := s.Get(ctx, mh)
				if err != nil {
					t.Fatal(err)
				}
				return vs
			}
			for _, mh := range []multihash.Multihash{short, id} {
				if vs := get(mh); len(vs) != 1 || !vs[0].Equal(a) {
					t.Fatalf("Get(%s) = %v, want a's value", mh, vs)
				}
			}
			wantFull := 1
			if tc.prefix {
				wantFull = 2 // shared with trunc
			}
			if vs := get(full); len(vs) != wantFull {
				t.Fatalf("Get(full) = %v, want %d values", vs, wantFull)
			}
			if err := s.Remove(ctx, b.ProviderID, b.ContextID, trunc); err != nil {
				t.Fatal(err)
			}
			if vs := get(full); len(vs) != 1 || !vs[0].Equal(a) {
				t.Fatalf("Get(full) after b's removal = %v, want a's value", vs)
			}
			var got []string
			for e, err := range s.All(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Multihash.HexString())
			}
			want := []string{full.HexString(), short.HexString(), id.HexString()}
			if tc.prefix {
				want[0] = trunc.HexString() // the form
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("All yields %v, want %v", got, want)
			}
		})
	}
}

// RemoveRanges on stores without populations, with and without sorted
// runs: with runs large enough to hold every Put, the removal must apply
// them before it deletes, or they land after it and bring the removed
// multihashes back.
func TestRemoveRanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []pebble.Option
	}{
		{"whole-keys", nil},
		{"prefix", []pebble.Option{pebble.WithDigestPrefixKeys()}},
		{"runs", []pebble.Option{pebble.WithDigestPrefixKeys(), pebble.WithSortedRuns(64 << 20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.RunRemoveRanges(t, func(t *testing.T) store.Store {
				opts := append([]pebble.Option{pebble.WithCacheSize(8 << 20), pebble.WithoutPopulations()}, tc.opts...)
				return mustOpen(t, func(dir string) (store.Store, error) { return pebble.Open(dir, opts...) })
			})
		})
	}
}

// A store that keeps populations, or held them before it was opened
// without, refuses RemoveRanges and removes nothing.
func TestRemoveRangesRefusedWithPopulations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebble.Open(dir, pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("c"), Metadata: []byte("m")}
	mhs := storetest.Multihashes("refused", 100)
	if err := s.Put(ctx, v, mhs...); err != nil {
		t.Fatal(err)
	}
	all := store.Span{Start: []byte{0}, End: []byte{0xff}}
	for _, reopen := range []bool{false, true} {
		if reopen {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = pebble.Open(dir, pebble.WithCacheSize(8<<20), pebble.WithoutPopulations()); err != nil {
				t.Fatal(err)
			}
		}
		err := s.RemoveRanges(ctx, all)
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("reopened without populations %v: RemoveRanges = %v, want errors.ErrUnsupported", reopen, err)
		}
		t.Logf("reopened without populations %v: %v", reopen, err)
		for _, mh := range mhs {
			if got, err := s.Get(ctx, mh); err != nil || len(got) != 1 {
				t.Fatalf("Get after a refused RemoveRanges = %v, %v", got, err)
			}
		}
	}
	s.Close()
}
