package publishernode

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
)

// TestTruthRemoved: the truth's Removed are exactly the multihashes that
// a replay of the regenerated chain's ads (chaingen, read back as
// advertisements and entry chunks: an IsRm ad drops its context, an ad
// with entries adds them to its context) finds advertised and no longer
// held by any live context; its Entries are exactly the held ones. GET
// /truth?entries=1 serves the same list; without entries=1 only the count.
func TestTruthRemoved(t *testing.T) {
	ctx := t.Context()
	spec := Spec{Seed: 23, Ads: 40, Entries: 7, ChunkSize: 3, RemoveEvery: 4, UpdateEvery: 3}
	p := newPublisher(t, spec)
	chain, err := chaingen.Generate(spec.chainConfig(spec.Ads))
	if err != nil {
		t.Fatal(err)
	}
	if !chain.Head().Equals(p.Head()) {
		t.Fatalf("regenerated head %s, publisher's %s", chain.Head(), p.Head())
	}

	live := map[string][]multihash.Multihash{} // context ID -> its multihashes
	advertised := map[string]multihash.Multihash{}
	removals := 0
	for i := range chain.Len() {
		ad, err := chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if ad.IsRm {
			delete(live, string(ad.ContextID))
			removals++
			continue
		}
		if !ad.HasEntries() {
			continue // a metadata update
		}
		for c := ad.Entries; c.Defined(); {
			b, err := chain.Block(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := schema.DecodeEntryChunk(c, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, mh := range ch.Entries {
				live[string(ad.ContextID)] = append(live[string(ad.ContextID)], mh)
				advertised[string(mh)] = mh
			}
			c = ch.Next
		}
	}
	held := map[string]bool{}
	for _, mhs := range live {
		for _, mh := range mhs {
			held[string(mh)] = true
		}
	}
	var wantRemoved, wantLive []string
	keys := slices.SortedFunc(func(yield func(multihash.Multihash) bool) {
		for _, mh := range advertised {
			if !yield(mh) {
				return
			}
		}
	}, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	for _, mh := range keys {
		if held[string(mh)] {
			wantLive = append(wantLive, mh.B58String())
		} else {
			wantRemoved = append(wantRemoved, mh.B58String())
		}
	}
	if removals == 0 || len(wantRemoved) == 0 {
		t.Fatalf("%d removals, %d removed multihashes: the spec removes nothing", removals, len(wantRemoved))
	}

	tr := p.Truth(true)
	if !slices.Equal(tr.Removed, wantRemoved) || tr.RemovedMultihashes != len(wantRemoved) {
		t.Fatalf("Removed %d (count %d), want %d:\n got %v\nwant %v",
			len(tr.Removed), tr.RemovedMultihashes, len(wantRemoved), tr.Removed, wantRemoved)
	}
	var gotLive []string
	for _, e := range tr.Entries {
		gotLive = append(gotLive, e.Multihash)
	}
	if !slices.Equal(gotLive, wantLive) {
		t.Fatalf("Entries hold %d multihashes, the replay %d", len(gotLive), len(wantLive))
	}
	t.Logf("%d ads, %d removals: %d live, %d removed multihashes", chain.Len(), removals, len(wantLive), len(wantRemoved))

	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	var served, short Truth
	getJSON(t, srv.URL+"/truth?entries=1", &served)
	if !slices.Equal(served.Removed, wantRemoved) || served.RemovedMultihashes != len(wantRemoved) {
		t.Fatalf("GET /truth?entries=1: Removed %d (count %d), want %d", len(served.Removed), served.RemovedMultihashes, len(wantRemoved))
	}
	getJSON(t, srv.URL+"/truth", &short)
	if short.Removed != nil || short.RemovedMultihashes != len(wantRemoved) {
		t.Fatalf("GET /truth: Removed %d (count %d), want none listed, count %d", len(short.Removed), short.RemovedMultihashes, len(wantRemoved))
	}

	// A faulty publisher's truth is empty: nothing removed either.
	bad := newPublisher(t, Spec{Seed: 23, Ads: 40, Entries: 7, ChunkSize: 3, RemoveEvery: 4, Fault: BadSignature})
	if bt := bad.Truth(true); bt.Removed != nil || bt.RemovedMultihashes != 0 {
		t.Fatalf("faulty publisher: Removed %d (count %d), want none", len(bt.Removed), bt.RemovedMultihashes)
	}
}

// TestSampleRemoved: beyond its bound, Removed is an evenly spaced,
// deterministic sample, the first included, in order; a publisher with
// more removed multihashes than MaxRemoved lists MaxRemoved of them and
// counts them all.
func TestSampleRemoved(t *testing.T) {
	p := newPublisher(t, Spec{Seed: 5, Ads: 21, Entries: 1000, ChunkSize: 1000, RemoveEvery: 2})
	tr := p.Truth(true)
	if tr.RemovedMultihashes != 10*1000 || len(tr.Removed) != MaxRemoved || tr.Multihashes != 1000 {
		t.Fatalf("Removed %d of %d counted, %d live; want %d of 10000, 1000 live", len(tr.Removed), tr.RemovedMultihashes, tr.Multihashes, MaxRemoved)
	}
	if again := p.Truth(true); !slices.Equal(again.Removed, tr.Removed) {
		t.Fatal("the sample of Removed changed between two truths of one head")
	}

	s := make([]int, 25)
	for i := range s {
		s[i] = i
	}
	if got := sample(s, 30); !slices.Equal(got, s) {
		t.Fatalf("sample under the bound: %v", got)
	}
	got := sample(s, 10)
	want := []int{0, 2, 5, 7, 10, 12, 15, 17, 20, 22}
	if !slices.Equal(got, want) || !slices.Equal(sample(s, 10), got) {
		t.Fatalf("sample(25, 10) = %v, want %v", got, want)
	}
}

// TestSpecLasting: the multihash Spec.Lasting names is in the publisher's
// truth, with the same values, from its ad to the horizon; a faulty
// publisher has none.
func TestSpecLasting(t *testing.T) {
	const horizon = 60
	spec := Spec{Seed: 23, Ads: 0, Entries: 7, ChunkSize: 3, RemoveEvery: 4, UpdateEvery: 3, PieceContextEvery: 5}
	mh, ad, ok, err := spec.Lasting(horizon)
	if err != nil || !ok {
		t.Fatalf("Lasting = %v, %v", ok, err)
	}
	p := newPublisher(t, spec)
	var want []Value
	for n := 1; n <= horizon; n++ {
		if err := p.Publish(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		var got []Value
		for _, e := range p.Truth(true).Entries {
			if e.Multihash == mh.B58String() {
				got = e.Values
			}
		}
		switch {
		case n < ad && got != nil:
			t.Fatalf("ad %d: %s held before its ad %d", n, mh.B58String(), ad)
		case n == ad:
			if want = got; len(want) == 0 {
				t.Fatalf("ad %d: %s not in the truth", n, mh.B58String())
			}
		case n > ad && !slices.EqualFunc(got, want, func(a, b Value) bool {
			return a.ProviderID == b.ProviderID && bytes.Equal(a.ContextID, b.ContextID) && bytes.Equal(a.Metadata, b.Metadata)
		}):
			t.Fatalf("ad %d: %s has %v, at its ad %d %v", n, mh.B58String(), got, ad, want)
		}
	}
	spec.Fault = CorruptBlocks
	if _, _, ok, err := spec.Lasting(horizon); ok || err != nil {
		t.Errorf("a faulty publisher's Lasting = %v, %v; want false, nil", ok, err)
	}
}
