package ingest_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore/query"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// recording serves a chain and records the CIDs of every block fetched.
type recording struct {
	ingest.Syncer
	mu  sync.Mutex
	got map[cid.Cid]bool
}

func (r *recording) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	r.mu.Lock()
	r.got[c] = true
	r.mu.Unlock()
	return r.Syncer.Block(ctx, c)
}

func (r *recording) fetched(c cid.Cid) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[c]
}

// While frozen (WithFrozen), a walk applies removals and metadata updates
// but fetches and stores no entries; once unfrozen, Reset to the frozen
// point makes the next walk apply the frozen-period ads with their
// entries, ending equal to the model.
func TestFrozen(t *testing.T) {
	ctx := context.Background()
	// No reuse and no shared multihashes: a context of the first ten ads
	// keeps its multihashes until removed, and later ads index only new
	// multihashes.
	chain := generate(t, chaingen.Config{Seed: 31, Ads: 10, MhsPerAd: 6, ChunkSize: 4, RemoveEvery: 4, UpdateEvery: 3})
	st := memory.New()
	defer st.Close()
	src := &recording{Syncer: chain.Source(), got: make(map[cid.Cid]bool)}
	srcs := newSources()
	srcs.set(chain.Publisher, src)
	var frozen atomic.Bool
	ing := newIngester(t, st, newDS(), srcs, ingest.WithFrozen(frozen.Load))
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
	frozenAt := chain.Head()
	before := chain.Model()
	var mhs []multihash.Multihash
	for e, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		mhs = append(mhs, e.Multihash)
	}

	frozen.Store(true)
	if err := chain.Extend(10); err != nil {
		t.Fatal(err)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	// No entry block of a frozen-period ad was fetched.
	var removals, withEntries int
	for i := 10; i < 20; i++ {
		ad, err := chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if ad.IsRm {
			removals++
		}
		if ad.HasEntries() {
			withEntries++
			if src.fetched(ad.Entries) {
				t.Fatalf("ad %d: entries fetched while frozen", i)
			}
		}
	}
	if removals == 0 || withEntries == 0 {
		t.Fatalf("chain has %d removals and %d ads with entries after the freeze; want some of each", removals, withEntries)
	}
	// The store holds the multihashes of before the freeze, with the
	// removals and metadata updates since applied: the final model
	// restricted to the contexts that existed before the freeze.
	final := chain.Model()
	old := before.Contexts()
	n := 0
	for _, mh := range mhs {
		want := slices.DeleteFunc(final.Values(mh), func(v store.Value) bool {
			return !slices.ContainsFunc(old, v.SameContext)
		})
		got, err := st.Get(ctx, mh)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 {
			n++
		}
		if !sameValueSet(got, want) {
			t.Fatalf("%s: got %v, want %v", mh, got, want)
		}
	}
	size := 0
	for _, err := range st.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		size++
	}
	if size != n {
		t.Fatalf("store holds %d multihashes while frozen, want %d", size, n)
	}
	info, err := st.Provider(ctx, chain.Provider)
	if err != nil || !info.LastAdvertisement.Equals(chain.Head()) {
		t.Fatalf("provider record %+v, %v: want LastAdvertisement at the head", info, err)
	}

	// Unfreeze: reset to the frozen point; the next walk ingests the
	// frozen-period ads again, with their entries.
	frozen.Store(false)
	w, err := ing.Walker(chain.Publisher)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Reset(ctx, frozenAt); err != nil {
		t.Fatal(err)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, final, st)
}

func sameValueSet(a, b []store.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.ContainsFunc(b, func(o store.Value) bool {
			return v.SameContext(o) && bytes.Equal(v.Metadata, o.Metadata)
		}) {
			return false
		}
	}
	return true
}

// A frozen node walks its publishers for as long as they publish, so what
// it keeps per advertisement must not grow: after a first walk, forty
// walks of five advertisements each while frozen leave the walker's state
// with as many keys as it had, and a walk asked for a recent head walks
// nothing. Once unfrozen and reset to the frozen point, the next walk
// applies the frozen-period advertisements again with their entries.
func TestFrozenWalksKeepNoMarkers(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 32, Ads: 10, MhsPerAd: 4, ChunkSize: 4, RemoveEvery: 4, UpdateEvery: 3})
	st := memory.New()
	defer st.Close()
	ds := newDS()
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	var frozen atomic.Bool
	ing := newIngester(t, st, ds, srcs, ingest.WithFrozen(frozen.Load))
	keys := func() int {
		t.Helper()
		res, err := ds.Query(ctx, query.Query{Prefix: "/walk/", KeysOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		all, err := res.Rest()
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	frozenAt := chain.Head()
	// The first walk leaves one marker per ad, and its head: let one more
	// walk add its head too, so that the count below is the steady one.
	if err := chain.Extend(1); err != nil {
		t.Fatal(err)
	}
	frozen.Store(true)
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	before := keys()
	w, err := ing.Walker(chain.Publisher)
	if err != nil {
		t.Fatal(err)
	}
	var heads []cid.Cid
	for range 40 {
		if err := chain.Extend(5); err != nil {
			t.Fatal(err)
		}
		if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, chain.Head())
	}
	if after := keys(); after != before {
		t.Fatalf("the walker's state went from %d keys to %d over 200 ads walked frozen", before, after)
	}
	// A walk asked for the head of a recent walk walks nothing.
	var count countingApplier
	if err := w.Walk(ctx, chain.Source(), heads[len(heads)-3], &count); err != nil {
		t.Fatal(err)
	}
	if count.n != 0 {
		t.Fatalf("a walk to a recent head applied %d ads", count.n)
	}
	s, err := w.State(ctx)
	if err != nil || !s.LastHead.Equals(chain.Head()) {
		t.Fatalf("walker state %+v, %v: want LastHead at the head", s, err)
	}

	frozen.Store(false)
	if err := w.Reset(ctx, frozenAt); err != nil {
		t.Fatal(err)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
}

// countingApplier counts the ads it is given, and applies nothing.
type countingApplier struct{ n int }

func (a *countingApplier) Apply(context.Context, ingest.Syncer, ingest.Ad) error {
	a.n++
	return nil
}

func (a *countingApplier) Flush(context.Context) error { return nil }
