package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	hamt "github.com/ipld/go-ipld-adl-hamt"
	"github.com/ipld/go-ipld-prime"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/node/bindnode"
	ipldschema "github.com/ipld/go-ipld-prime/schema"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

// hamtShape is how a test HAMT is built by go-ipld-adl-hamt.
type hamtShape struct {
	codec      uint64 // of every block
	bitWidth   int
	bucketSize int
}

// deep is a shape whose small nodes and buckets make a HAMT of a few
// hundred keys several levels deep.
var deep = hamtShape{codec: schema.DagCBOR, bitWidth: 3, bucketSize: 1}

// hamtLinkSystem stores blocks in o and reads them back.
func hamtLinkSystem(o *overlay) ipld.LinkSystem {
	ls := cidlink.DefaultLinkSystem()
	ls.StorageWriteOpener = func(ipld.LinkContext) (io.Writer, ipld.BlockWriteCommitter, error) {
		var buf bytes.Buffer
		return &buf, func(l ipld.Link) error {
			o.blocks[l.(cidlink.Link).Cid] = bytes.Clone(buf.Bytes())
			return nil
		}, nil
	}
	ls.StorageReadOpener = func(_ ipld.LinkContext, l ipld.Link) (io.Reader, error) {
		b, ok := o.blocks[l.(cidlink.Link).Cid]
		if !ok {
			return nil, fmt.Errorf("no block %s", l)
		}
		return bytes.NewReader(b), nil
	}
	return ls
}

// hamtBlock builds, with go-ipld-adl-hamt, a HAMT of shape s with the keys
// (values true), adds its blocks to o and returns the root's CID.
func hamtBlock(t testing.TB, o *overlay, s hamtShape, keys [][]byte) cid.Cid {
	t.Helper()
	ls := hamtLinkSystem(o)
	lp := cidlink.LinkPrototype{Prefix: cid.Prefix{Version: 1, Codec: s.codec, MhType: multihash.SHA2_256, MhLength: -1}}
	b := hamt.NewBuilder(hamt.Prototype{BitWidth: s.bitWidth, BucketSize: s.bucketSize}).WithLinking(ls, lp)
	ma, err := b.BeginMap(int64(len(keys)))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := ma.AssembleKey().AssignBytes(k); err != nil {
			t.Fatal(err)
		}
		if err := ma.AssembleValue().AssignBool(true); err != nil {
			t.Fatal(err)
		}
	}
	if err := ma.Finish(); err != nil {
		t.Fatal(err)
	}
	root := b.Build().(*hamt.Node).Substrate().(ipldschema.TypedNode).Representation()
	l, err := ls.Store(ipld.LinkContext{Ctx: context.Background()}, lp, root)
	if err != nil {
		t.Fatal(err)
	}
	return l.(cidlink.Link).Cid
}

// hamtEntries builds a HAMT of mhs; see hamtBlock.
func hamtEntries(t testing.TB, o *overlay, s hamtShape, mhs []multihash.Multihash) cid.Cid {
	t.Helper()
	keys := make([][]byte, len(mhs))
	for i, mh := range mhs {
		keys[i] = mh
	}
	return hamtBlock(t, o, s, keys)
}

// loadHAMTRoot decodes a root built by hamtBlock with go-ipld-adl-hamt.
func loadHAMTRoot(t testing.TB, o *overlay, c cid.Cid) *hamt.HashMapRoot {
	t.Helper()
	ls := hamtLinkSystem(o)
	n, err := ls.Load(ipld.LinkContext{Ctx: context.Background()}, cidlink.Link{Cid: c},
		hamt.HashMapRootPrototype.Representation())
	if err != nil {
		t.Fatal(err)
	}
	return bindnode.Unwrap(n).(*hamt.HashMapRoot)
}

// hamtDepth returns the number of levels of the HAMT at c, and its child
// nodes' CIDs.
func hamtDepth(t testing.TB, o *overlay, c cid.Cid) (int, []cid.Cid) {
	t.Helper()
	ls := hamtLinkSystem(o)
	var children []cid.Cid
	var depth func(n *hamt.HashMapNode) int
	depth = func(n *hamt.HashMapNode) int {
		d := 1
		for _, e := range n.Data {
			if e.HashMapNode == nil {
				continue
			}
			cc := (*e.HashMapNode).(cidlink.Link).Cid
			children = append(children, cc)
			cn, err := ls.Load(ipld.LinkContext{Ctx: context.Background()}, cidlink.Link{Cid: cc},
				hamt.HashMapNodePrototype.Representation())
			if err != nil {
				t.Fatal(err)
			}
			d = max(d, 1+depth(bindnode.Unwrap(cn).(*hamt.HashMapNode)))
		}
		return d
	}
	return depth(&loadHAMTRoot(t, o, c).Hamt), children
}

// storeHAMTRoot encodes root as dag-cbor into o.
func storeHAMTRoot(t testing.TB, o *overlay, root *hamt.HashMapRoot) cid.Cid {
	t.Helper()
	b, err := ipld.Encode(bindnode.Wrap(root, hamt.HashMapRootPrototype.Type()), dagcbor.Encode)
	if err != nil {
		t.Fatal(err)
	}
	return rawBlock(t, o, schema.DagCBOR, b)
}

// pushAd signs ad (by key, unless nil) and adds it on top of o's head.
func pushAd(t testing.TB, o *overlay, key crypto.PrivKey, ad *schema.Advertisement) {
	t.Helper()
	head, err := o.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ad.PreviousID = head
	if key != nil {
		if err := ad.Sign(key); err != nil {
			t.Fatal(err)
		}
	}
	block, c, err := ad.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o.blocks[c], o.head = block, c
}

// equalValues checks that the values of provider in st are exactly want
// (multihash bytes to values, in any order).
func equalValues(t testing.TB, st store.Store, provider peer.ID, want map[string][]store.Value) {
	t.Helper()
	got := make(map[string][]store.Value)
	for e, err := range (providerView{st, provider}).All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Values) > 0 {
			got[string(e.Multihash)] = e.Values
		}
	}
	same := func(a, b []store.Value) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(v store.Value) bool {
			return !slices.ContainsFunc(b, v.Equal)
		})
	}
	bad := 0
	for k, w := range want {
		if g := got[k]; !same(g, w) {
			if bad++; bad <= 5 {
				t.Errorf("%s: got %v, want %v", multihash.Multihash(k).B58String(), g, w)
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s: got %v, want nothing", multihash.Multihash(k).B58String(), g)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d multihashes differ (got %d, want %d)", bad, len(got), len(want))
	}
}

func newProvider(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// An advertisement whose entries are a HAMT several levels deep, in
// either codec, indexes exactly the HAMT's keys; malformed multihash keys
// are skipped.
func TestHAMTEntries(t *testing.T) {
	shapes := []struct {
		name  string
		shape hamtShape
	}{
		{"cbor-deep", deep},
		{"json-deep", hamtShape{codec: schema.DagJSON, bitWidth: 3, bucketSize: 2}},
		{"cbor-default", hamtShape{codec: schema.DagCBOR, bitWidth: 5, bucketSize: 3}},
	}
	for _, sh := range shapes {
		for _, batch := range []int{64, ingest.DefaultBatchSize} {
			t.Run(fmt.Sprintf("%s/batch-%d", sh.name, batch), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				chain := generate(t, chaingen.Config{Seed: 500, Ads: 5, MhsPerAd: 10, ChunkSize: 4})
				key, provider := newProvider(t)
				mhs := storetest.Multihashes("hamt-"+sh.name, 700)
				keys := make([][]byte, 0, len(mhs)+1)
				for _, mh := range mhs {
					keys = append(keys, mh)
				}
				keys = append(keys, []byte("not a multihash"))
				o := &overlay{base: chain.Source(), blocks: make(map[cid.Cid][]byte)}
				root := hamtBlock(t, o, sh.shape, keys)
				if d, children := hamtDepth(t, o, root); d < 3 || len(children) < 10 {
					t.Fatalf("HAMT of %d levels, %d child nodes: not deep enough", d, len(children))
				} else {
					t.Logf("HAMT of %d levels, %d child nodes", d, len(children))
				}
				ad := &schema.Advertisement{Provider: provider.String(), Addresses: chain.Addrs, Entries: root,
					ContextID: []byte("hamt-ctx"), Metadata: []byte{0x80, 0x12, 0x01}}
				pushAd(t, o, key, ad)

				st := memory.New()
				defer st.Close()
				srcs := newSources()
				srcs.set(chain.Publisher, o)
				ing := newIngester(t, st, newDS(), srcs, ingest.WithBatchSize(batch))
				if err := ing.Sync(ctx, chain.Publisher, testAddrs, o.head); err != nil {
					t.Fatal(err)
				}
				want := make(map[string][]store.Value)
				v := store.Value{ProviderID: provider, ContextID: ad.ContextID, Metadata: ad.Metadata}
				for _, mh := range mhs {
					want[string(mh)] = []store.Value{v}
				}
				equalValues(t, st, provider, want)
				equalModel(t, chain.Model(), providerView{st, chain.Provider})
				if s, _ := ing.Status(chain.Publisher); s.EntriesIndexed < uint64(len(mhs)) {
					t.Errorf("status counts %d entries, want at least %d", s.EntriesIndexed, len(mhs))
				}
				info, err := st.Provider(ctx, provider)
				if err != nil {
					t.Fatal(err)
				}
				if !info.LastAdvertisement.Equals(o.head) || info.LastError != "" {
					t.Errorf("provider record %+v", info)
				}
			})
		}
	}
}

// A chain mixing entry-chain and HAMT advertisements, with a removal and a
// context re-put, ends as expected.
func TestMixedEntriesChain(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 501, Ads: 20, MhsPerAd: 30, ChunkSize: 7, RemoveEvery: 4, UpdateEvery: 3})
	key, provider := newProvider(t)
	o := &overlay{base: chain.Source(), blocks: make(map[cid.Cid][]byte)}
	want := make(map[string][]store.Value)
	put := func(ctxID string, meta byte, mhs []multihash.Multihash) {
		for _, mh := range mhs {
			want[string(mh)] = append(want[string(mh)], store.Value{ProviderID: provider, ContextID: []byte(ctxID), Metadata: []byte{0x80, 0x12, meta}})
		}
	}
	ad := func(ctxID string, meta byte, entries cid.Cid, isRm bool) {
		pushAd(t, o, key, &schema.Advertisement{Provider: provider.String(), Addresses: chain.Addrs, Entries: entries,
			ContextID: []byte(ctxID), Metadata: []byte{0x80, 0x12, meta}, IsRm: isRm})
	}
	chunks := func(mhs []multihash.Multihash, size int) cid.Cid {
		next := cid.Undef
		for i := (len(mhs) - 1) / size * size; i >= 0; i -= size {
			next = chunkBlock(t, o, mhs[i:min(i+size, len(mhs))], next)
		}
		return next
	}

	h1 := storetest.Multihashes("mixed-h1", 200)
	c1 := storetest.Multihashes("mixed-c1", 120)
	h2 := append(storetest.Multihashes("mixed-h2", 150), h1[:20]...)
	h2 = append(h2, c1[:10]...)
	c2 := storetest.Multihashes("mixed-c2", 80)
	h3 := storetest.Multihashes("mixed-h3", 300)

	ad("h1", 1, hamtEntries(t, o, deep, h1), false)
	ad("c1", 2, chunks(c1, 50), false)
	put("c1", 2, c1)
	ad("h2", 3, hamtEntries(t, o, hamtShape{codec: schema.DagJSON, bitWidth: 4, bucketSize: 2}, h2), false)
	put("h2", 3, h2)
	ad("h1", 0, schema.NoEntries, true) // h1 is never indexed
	ad("c2", 4, chunks(c2, 30), false)
	put("c2", 4, c2)
	ad("h3", 5, hamtEntries(t, o, deep, h3), false)
	// Re-put h3 with new metadata, half of it as a chain: the context has
	// the new metadata throughout.
	ad("h3", 6, chunks(h3[:150], 40), false)
	put("h3", 6, h3)

	for _, batch := range []int{50, ingest.DefaultBatchSize} {
		t.Run(fmt.Sprintf("batch-%d", batch), func(t *testing.T) {
			st := memory.New()
			defer st.Close()
			srcs := newSources()
			srcs.set(chain.Publisher, o)
			ing := newIngester(t, st, newDS(), srcs, ingest.WithBatchSize(batch))
			if err := ing.Sync(ctx, chain.Publisher, testAddrs, o.head); err != nil {
				t.Fatal(err)
			}
			equalValues(t, st, provider, want)
			equalModel(t, chain.Model(), providerView{st, chain.Provider})
		})
	}
}

// Each HAMT fault gives a named error and leaves the store unchanged for
// the advertisement (everything before it applied).
func TestHAMTFaults(t *testing.T) {
	mhs := storetest.Multihashes("hamt-faults", 400)
	cases := []struct {
		name string
		opts []ingest.Option
		// entries builds the faulty entries in o.
		entries func(t *testing.T, o *overlay) cid.Cid
		want    []error
	}{
		{name: "corrupt child node", want: []error{ingest.ErrInvalidBlock, schema.ErrHashMismatch},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				root := hamtEntries(t, o, deep, mhs)
				_, children := hamtDepth(t, o, root)
				c := children[len(children)-1] // a deep one
				b := bytes.Clone(o.blocks[c])
				b[len(b)-1] ^= 1
				o.blocks[c] = b
				return root
			}},
		{name: "malformed child node", want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				r := loadHAMTRoot(t, o, hamtEntries(t, o, deep, mhs))
				// A child whose bitmap has a bit set but no element.
				bad, err := ipld.Encode(bindnode.Wrap(&hamt.HashMapNode{Map: []byte{0x80}, Data: []hamt.Element{}},
					hamt.HashMapNodePrototype.Type()), dagcbor.Encode)
				if err != nil {
					t.Fatal(err)
				}
				var l ipld.Link = cidlink.Link{Cid: rawBlock(t, o, schema.DagCBOR, bad)}
				i := slices.IndexFunc(r.Hamt.Data, func(e hamt.Element) bool { return e.HashMapNode != nil })
				r.Hamt.Data[i] = hamt.Element{HashMapNode: &l}
				return storeHAMTRoot(t, o, r)
			}},
		{name: "child not a HAMT node", want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				r := loadHAMTRoot(t, o, hamtEntries(t, o, deep, mhs))
				var l ipld.Link = cidlink.Link{Cid: chunkBlock(t, o, mhs[:3], cid.Undef)}
				i := slices.IndexFunc(r.Hamt.Data, func(e hamt.Element) bool { return e.HashMapNode != nil })
				r.Hamt.Data[i] = hamt.Element{HashMapNode: &l}
				return storeHAMTRoot(t, o, r)
			}},
		{name: "bucket over bucketSize", want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				r := loadHAMTRoot(t, o, hamtEntries(t, o, hamtShape{codec: schema.DagCBOR, bitWidth: 8, bucketSize: 3}, mhs[:50]))
				r.BucketSize = 1
				return storeHAMTRoot(t, o, r)
			}},
		{name: "malformed root", want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				r := loadHAMTRoot(t, o, hamtEntries(t, o, deep, mhs))
				r.Hamt.Map = append(r.Hamt.Map, 0, 0) // 3 bytes
				return storeHAMTRoot(t, o, r)
			}},
		{name: "missing child node", want: []error{ingest.ErrFetch, chaingen.ErrNotFound},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				root := hamtEntries(t, o, deep, mhs)
				_, children := hamtDepth(t, o, root)
				delete(o.blocks, children[len(children)/2])
				return root
			}},
		{name: "depth limit", want: []error{ingest.ErrDepthLimit},
			opts: []ingest.Option{ingest.WithDepthLimits(1000, 8)},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				return hamtEntries(t, o, deep, mhs)
			}},
		{name: "neither chunk nor HAMT", want: []error{ingest.ErrUnsupportedEntries},
			entries: func(t *testing.T, o *overlay) cid.Cid {
				return rawBlock(t, o, schema.DagJSON, []byte(`{"hashAlg":1,"bucketSize":3}`))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			chain := generate(t, chaingen.Config{Seed: 502, Ads: 6, MhsPerAd: 10, ChunkSize: 4, RemoveEvery: 3})
			o := topAd(t, chain, chain.ProviderKey, func(ad *schema.Advertisement, o *overlay) {
				ad.Entries = tc.entries(t, o)
			})
			st := memory.New()
			defer st.Close()
			srcs := newSources()
			srcs.set(chain.Publisher, o)
			ing := newIngester(t, st, newDS(), srcs, tc.opts...)
			err := ing.Sync(ctx, chain.Publisher, testAddrs, o.head)
			var ae *ingest.AdError
			if !errors.As(err, &ae) || !ae.Ad.Equals(o.head) {
				t.Fatalf("error %v, want an AdError of the top ad", err)
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Errorf("error %v\ndoes not wrap %v", err, want)
				}
			}
			t.Logf("error: %v", err)
			equalModel(t, chain.Model(), st)
			if s, _ := ing.Status(chain.Publisher); s.Pending != 1 || !s.Head.Equals(o.head) {
				t.Errorf("stalled walk status %+v", s)
			}
		})
	}
}
