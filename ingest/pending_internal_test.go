package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	dspebble "github.com/ipfs/go-ds-pebble"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
)

// mixedChain is a chain with every kind of advertisement the compact form
// must carry: removals, metadata updates, extended providers, piece
// contexts, signed by a publisher.
func mixedChain(t *testing.T, ads int) *chaingen.Chain {
	t.Helper()
	chain, err := chaingen.Generate(chaingen.Config{Seed: 7, Ads: ads, MhsPerAd: 3, RemoveEvery: 5, UpdateEvery: 4,
		ExtendedEvery: 3, PieceContextEvery: 2, PublisherSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	return chain
}

// normAd returns a copy of ad with its empty slices nil, so that ads
// decoded from a block and from the compact form compare equal.
func normAd(ad *schema.Advertisement) *schema.Advertisement {
	n := *ad
	nilIfEmpty := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		return b
	}
	texts := func(ss []string) []string {
		if len(ss) == 0 {
			return nil
		}
		return ss
	}
	n.Addresses, n.Signature, n.ContextID, n.Metadata = texts(n.Addresses), nilIfEmpty(n.Signature), nilIfEmpty(n.ContextID), nilIfEmpty(n.Metadata)
	if ep := ad.ExtendedProvider; ep != nil {
		e := schema.ExtendedProvider{Override: ep.Override}
		for _, p := range ep.Providers {
			e.Providers = append(e.Providers, schema.ProviderEntry{ID: p.ID, Addresses: texts(p.Addresses),
				Metadata: nilIfEmpty(p.Metadata), Signature: nilIfEmpty(p.Signature)})
		}
		n.ExtendedProvider = &e
	}
	return &n
}

// The compact form of a pending advertisement gives back the
// advertisement decoded from its block, field for field, in fewer bytes;
// every truncation of it, and it with a byte more, fails to decode.
func TestPendingCompact(t *testing.T) {
	chain := mixedChain(t, 40)
	var blockBytes, compactBytes int
	kinds := map[string]bool{}
	for i, c := range chain.Ads {
		block, err := chain.Block(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		ad, err := schema.DecodeAdvertisement(c, block)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ad.IsRm:
			kinds["removal"] = true
		case ad.ExtendedProvider != nil:
			kinds["extended"] = true
		case !ad.HasEntries():
			kinds["update"] = true
		}
		if !ad.PreviousID.Defined() {
			kinds["genesis"] = true
		}
		p := pending{flags: flagVerified | byte(i%2)*flagRemoved, cid: c, signer: chain.Publisher, ad: ad}
		b := p.encode()
		got, err := decodePending(b)
		if err != nil {
			t.Fatalf("ad %d: %v", i, err)
		}
		if got.flags != p.flags|flagCompact || !got.cid.Equals(c) || got.signer != p.signer || got.block != nil {
			t.Fatalf("ad %d: decoded flags %b, CID %s, signer %s, block %d bytes; want %b, %s, %s, none",
				i, got.flags, got.cid, got.signer, len(got.block), p.flags|flagCompact, c, p.signer)
		}
		if !reflect.DeepEqual(normAd(got.ad), normAd(ad)) {
			t.Fatalf("ad %d: compact form gives\n%+v\nwant\n%+v", i, normAd(got.ad), normAd(ad))
		}
		if _, err := decodePending(append(b[:len(b):len(b)], 0)); err == nil {
			t.Fatalf("ad %d: a value with a byte more decodes", i)
		}
		for n := range len(b) {
			if _, err := decodePending(b[:n]); err == nil {
				t.Fatalf("ad %d: a value cut to %d of its %d bytes decodes", i, n, len(b))
			}
		}
		blockBytes += len(block)
		compactBytes += len(b)
	}
	for _, k := range []string{"removal", "extended", "update", "genesis"} {
		if !kinds[k] {
			t.Errorf("the chain has no %s advertisement", k)
		}
	}
	if compactBytes >= blockBytes {
		t.Errorf("compact values take %d bytes, the blocks %d", compactBytes, blockBytes)
	}
}

// The compact form writes every field of schema.Advertisement: one added
// there needs adding to appendCompactAd and decodeCompactAd (and a new
// flag, for values written before).
func TestCompactAdFields(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want int
	}{
		{reflect.TypeFor[schema.Advertisement](), 9},
		{reflect.TypeFor[schema.ExtendedProvider](), 2},
		{reflect.TypeFor[schema.ProviderEntry](), 4},
	} {
		if got := c.typ.NumField(); got != c.want {
			t.Errorf("%s has %d fields, the compact form writes %d", c.typ, got, c.want)
		}
	}
}

// recApplier records the advertisements it is given; it fails every
// Apply while fail is set.
type recApplier struct {
	fail bool
	ads  []Ad
}

var errRecFail = errors.New("recApplier: failing")

func (a *recApplier) Apply(_ context.Context, _ Syncer, ad Ad) error {
	if a.fail {
		return errRecFail
	}
	a.ads = append(a.ads, ad)
	return nil
}

func (a *recApplier) Flush(context.Context) error { return nil }

func keysUnder(t *testing.T, ds datastore.Read, prefix string) []string {
	t.Helper()
	res, err := ds.Query(context.Background(), query.Query{Prefix: prefix, KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	es, err := res.Rest()
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, e := range es {
		ks = append(ks, e.Key)
	}
	return ks
}

// A walk collected by an earlier version, which kept each pending
// advertisement's block (and a seen/<cid> marker for each), is applied by
// this one as it would have been: the same advertisements in the same
// order, decoded alike, and leaves none of those keys behind. Half the
// values are rewritten, as when an earlier version collected part of the
// walk before a restart.
func TestPendingOldFormat(t *testing.T) {
	ctx := context.Background()
	chain := mixedChain(t, 60)
	walk := func(convert func(ds datastore.Batching, k keys)) []Ad {
		t.Helper()
		ds, err := dspebble.NewDatastore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ds.Close()
		w, err := NewWalker(ds, chain.Publisher)
		if err != nil {
			t.Fatal(err)
		}
		a := &recApplier{fail: true}
		if err := w.Walk(ctx, chain.Source(), chain.Head(), a); !errors.Is(err, errRecFail) {
			t.Fatalf("first walk: %v, want the applier's error", err)
		}
		s, err := w.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Collected != len(chain.Ads) || s.Applied != 0 {
			t.Fatalf("after the first walk: %d collected, %d applied; want %d, 0", s.Collected, s.Applied, len(chain.Ads))
		}
		if convert != nil {
			convert(ds, w.keys)
		}
		// A new Walker, as after a restart.
		if w, err = NewWalker(ds, chain.Publisher); err != nil {
			t.Fatal(err)
		}
		a.fail = false
		if err := w.Walk(ctx, chain.Source(), chain.Head(), a); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{dirQueue, dirSeen, dirRemoved} {
			if ks := keysUnder(t, ds, w.keys.dir(d)); len(ks) > 0 {
				t.Errorf("%d keys left under %s, such as %s", len(ks), w.keys.dir(d), ks[0])
			}
		}
		return a.ads
	}
	want := walk(nil)
	// Removed as the chain says: a newer advertisement removes the
	// context.
	removedBy := func(i int) bool {
		ad, err := chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		for j := i + 1; j < len(chain.Ads); j++ {
			n, err := chain.Ad(j)
			if err != nil {
				t.Fatal(err)
			}
			if n.IsRm && n.Provider == ad.Provider && string(n.ContextID) == string(ad.ContextID) && len(ad.ContextID) > 0 {
				return true
			}
		}
		return false
	}
	removed := 0
	for i, a := range want {
		if r := removedBy(i); a.Removed != r {
			t.Errorf("ad %d: Removed %v, want %v", i, a.Removed, r)
		} else if r {
			removed++
		}
	}
	if removed == 0 {
		t.Error("no advertisement of the chain is removed by a newer one")
	}
	// The same with the removals looked up in the datastore rather than
	// held.
	defer func(n int) { maxHeldRemovals = n }(maxHeldRemovals)
	maxHeldRemovals = 0
	if lookedUp := walk(nil); !reflect.DeepEqual(removedFlags(lookedUp), removedFlags(want)) {
		t.Errorf("with removals looked up, Removed flags %v; held: %v", removedFlags(lookedUp), removedFlags(want))
	}
	maxHeldRemovals = 1 << 16
	converted := 0
	got := walk(func(ds datastore.Batching, k keys) {
		for i := range len(chain.Ads) {
			if i%2 == 1 {
				continue
			}
			raw, err := ds.Get(ctx, k.queue(i))
			if err != nil {
				t.Fatal(err)
			}
			p, err := decodePending(raw)
			if err != nil {
				t.Fatal(err)
			}
			if p.flags&flagCompact == 0 {
				t.Fatalf("q/%d is not compact", i)
			}
			if p.block, err = chain.Block(ctx, p.cid); err != nil {
				t.Fatal(err)
			}
			p.ad = nil
			old := p.encode()
			if old[0]&flagCompact != 0 {
				t.Fatal("encode of a block sets flagCompact")
			}
			if err := errors.Join(ds.Put(ctx, k.queue(i), old), ds.Put(ctx, k.seen(p.cid), nil)); err != nil {
				t.Fatal(err)
			}
			converted++
		}
	})
	if converted == 0 {
		t.Fatal("nothing converted")
	}
	if len(got) != len(want) || len(want) != len(chain.Ads) {
		t.Fatalf("applied %d advertisements from the older state, %d from this version's; want %d", len(got), len(want), len(chain.Ads))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Cid.Equals(chain.Ads[i]) || !g.Cid.Equals(w.Cid) || g.Provider != w.Provider || g.Signer != w.Signer || g.Removed != w.Removed {
			t.Errorf("ad %d: got %s provider %s signer %s removed %v; want %s, %s, %s, %v",
				i, g.Cid, g.Provider, g.Signer, g.Removed, w.Cid, w.Provider, w.Signer, w.Removed)
		}
		if !reflect.DeepEqual(normAd(g.Ad), normAd(w.Ad)) {
			t.Errorf("ad %d decodes differently from the older state:\n%+v\nwant\n%+v", i, normAd(g.Ad), normAd(w.Ad))
		}
	}
}

func removedFlags(ads []Ad) []bool {
	var f []bool
	for _, a := range ads {
		f = append(f, a.Removed)
	}
	return f
}

// cycleCheck finds a CID met twice within a few times the length of the
// cycle, whatever the tail before it, and never flags a chain without
// one.
func TestCycleCheck(t *testing.T) {
	cids := make([]cid.Cid, 5000)
	for i := range cids {
		mh, err := multihash.Sum(binary.AppendUvarint(nil, uint64(i)), multihash.SHA2_256, -1)
		if err != nil {
			t.Fatal(err)
		}
		cids[i] = cid.NewCidV1(cid.Raw, mh)
	}
	var cc cycleCheck
	for i, c := range cids {
		if cc.meet(c) {
			t.Fatalf("a chain of distinct CIDs flagged at %d", i)
		}
	}
	for _, tail := range []int{0, 1, 3, 100, 1000} {
		for _, n := range []int{1, 2, 3, 7, 64, 1000} {
			var cc cycleCheck
			steps := 0
			for i := 0; ; i++ {
				c := cids[i]
				if i >= tail {
					c = cids[tail+(i-tail)%n]
				}
				if cc.meet(c) {
					break
				}
				steps++
				if limit := 2*(tail+2*n) + 2; steps > limit {
					t.Fatalf("tail %d, cycle of %d: not found in %d steps", tail, n, limit)
				}
			}
			if steps < tail+n {
				t.Fatalf("tail %d, cycle of %d: flagged after %d steps, before any CID repeats", tail, n, steps)
			}
		}
	}
}
