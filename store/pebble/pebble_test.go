package pebble_test

import (
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

// The suite again with a record cache of about two records, so that nearly
// every lookup of a record or context reads it from Pebble.
func TestConformanceTinyRecordCache(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithCacheSize(8<<20), pebble.WithRecordCache(700))
	})
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
// sha2-256).
func TestConformanceDigestPrefixKeys(t *testing.T) {
	storetest.RunPersistent(t, func(dir string) (store.Store, error) {
		return pebble.Open(dir, pebble.WithDigestPrefixKeys(), pebble.WithCacheSize(8<<20))
	})
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

// A context stored before the store kept samples (its record has no sample
// key) reports store.ErrNotSampled, before and after a re-Put, and stays
// found by Get; a context created afterwards is sampled.
func TestSampleOfOlderContext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := pebble.Open(dir, pebble.WithCacheSize(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("old"), Metadata: []byte("m")}
	mhs := storetest.Multihashes("older", 10)
	if err := s.Put(ctx, v, mhs...); err != nil {
		t.Fatal(err)
	}
	// What an older version wrote: the record (ID 0) without its sample.
	if err := s.Pebble().Delete([]byte{0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0}, cpebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = pebble.Open(dir, pebble.WithCacheSize(8<<20)); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if _, err := s.Sample(ctx, v.ProviderID, v.ContextID); !errors.Is(err, store.ErrNotSampled) {
			t.Fatalf("Sample of a context without a sample key: %v, want ErrNotSampled", err)
		}
		if err := s.Put(ctx, v, storetest.Multihashes("older-more", 3)...); err != nil {
			t.Fatal(err)
		}
	}
	if vals, err := s.Get(ctx, mhs[0]); err != nil || len(vals) != 1 {
		t.Fatalf("Get: %v, %v", vals, err)
	}
	nv := store.Value{ProviderID: v.ProviderID, ContextID: []byte("new"), Metadata: []byte("m")}
	if err := s.Put(ctx, nv, mhs...); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Sample(ctx, nv.ProviderID, nv.ContextID); err != nil || len(got) != len(mhs) {
		t.Fatalf("Sample of a new context: %d multihashes, %v", len(got), err)
	}
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
