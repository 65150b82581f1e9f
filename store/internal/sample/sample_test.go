package sample

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/store"
)

// model is the bottom-k sample computed the obvious way: every distinct
// item sorted, the first SampleKeep kept, and Tau the smallest hash left
// out, minus the kept items that tie with it.
func model(all []Item) (tau uint64, kept []Item) {
	all = slices.Clone(all)
	slices.SortFunc(all, cmpItem)
	all = slices.CompactFunc(all, func(a, b Item) bool { return cmpItem(a, b) == 0 })
	if len(all) <= store.SampleKeep {
		return math.MaxUint64, all
	}
	tau = all[store.SampleKeep].Hash
	for _, it := range all[:store.SampleKeep] {
		if it.Hash < tau {
			kept = append(kept, it)
		}
	}
	return tau, kept
}

func equalItems(a, b []Item) bool {
	return slices.EqualFunc(a, b, func(x, y Item) bool { return cmpItem(x, y) == 0 })
}

// Items added in any batching and order, with repeats and hash ties, give
// the model's sample; so do multihashes filtered through Candidates.
func TestAddMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 300 {
		n := r.IntN(600)
		hashRange := uint64(1) << (4 + r.IntN(60)) // small ranges make ties
		var all []Item
		for i := range n {
			all = append(all, Item{Hash: r.Uint64N(hashRange), MH: fmt.Appendf(nil, "mh-%d", i)})
		}
		set := New()
		var added []Item
		for len(added) < n {
			k := 1 + r.IntN(100)
			batch := all[len(added):min(n, len(added)+k)]
			added = append(added, batch...)
			if r.IntN(3) == 0 && len(added) > 0 { // a repeat
				batch = append(slices.Clone(batch), added[r.IntN(len(added))])
			}
			set.Add(batch)
		}
		tau, kept := model(all)
		if set.Tau != tau || !equalItems(set.Items, kept) {
			t.Fatalf("round %d (%d items, hashes < %d): Tau %d with %d items, model Tau %d with %d", round, n, hashRange, set.Tau, len(set.Items), tau, len(kept))
		}
	}
	h := NewHasher(42)
	var mhs [][]byte
	for i := range 5000 {
		mhs = append(mhs, fmt.Appendf(nil, "multihash-%d", i))
	}
	set := New()
	for i := 0; i < len(mhs); i += 700 {
		set.Add(Candidates(h, set.Tau, mhs[i:min(i+700, len(mhs))]))
	}
	tau, kept := model(Below(h, math.MaxUint64, mhs))
	if set.Tau != tau || !equalItems(set.Items, kept) {
		t.Fatalf("through Candidates: Tau %d with %d items, model Tau %d with %d", set.Tau, len(set.Items), tau, len(kept))
	}
	// Remove takes members out, keeps Tau and ignores the others.
	set.Remove(Below(h, set.Tau, append(slices.Clone(mhs[:2500]), []byte("never put"))))
	var left []Item
	for _, it := range kept {
		if !slices.ContainsFunc(mhs[:2500], func(mh []byte) bool { return bytes.Equal(mh, it.MH) }) {
			left = append(left, it)
		}
	}
	if set.Tau != tau || !equalItems(set.Items, left) {
		t.Fatalf("after Remove: Tau %d with %d items, want Tau %d with %d", set.Tau, len(set.Items), tau, len(left))
	}
	back, err := Decode(set.Encode(nil), h)
	if err != nil || back.Tau != set.Tau || !equalItems(back.Items, set.Items) {
		t.Fatalf("Encode/Decode: %v", err)
	}
}
