package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

func rawBlock(t testing.TB, o *overlay, codec uint64, data []byte) cid.Cid {
	t.Helper()
	c, err := cid.Prefix{Version: 1, Codec: codec, MhType: multihash.SHA2_256, MhLength: -1}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	o.blocks[c] = data
	return c
}

// Each fault gives a named error, records it, and does not stop another
// publisher walked at the same time. A fault of the entries of an
// advertisement leaves the store as it was before that advertisement
// (every earlier one applied, the walk stalled there); an advertisement
// that does not verify (signature, hash, decoding, limits) is met while
// collecting, and the walk is abandoned with nothing of it kept.
func TestFaults(t *testing.T) {
	stranger, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	good := storetest.Multihashes("good-entries", 30)
	cases := []struct {
		name  string
		opts  []ingest.Option
		key   func(c *chaingen.Chain) crypto.PrivKey
		edit  func(t *testing.T, ad *schema.Advertisement, o *overlay)
		after func(o *overlay) // changes served blocks after signing
		want  []error
		// applied: the ads of the chain before the faulty one are
		// applied (false when the walk is abandoned while collecting).
		applied bool
	}{
		{name: "chunk hash mismatch", applied: true, want: []error{ingest.ErrInvalidBlock, schema.ErrHashMismatch},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				last := chunkBlock(t, o, good[20:], cid.Undef)
				o.blocks[last] = bytes.Replace(o.blocks[last], []byte("Entries"), []byte("Entriez"), 1)
				ad.Entries = chunkBlock(t, o, good[:20], last)
			}},
		{name: "undecodable chunk", applied: true, want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				bad := rawBlock(t, o, schema.DagJSON, []byte(`{"Entries": "not a list"}`))
				ad.Entries = chunkBlock(t, o, good[:20], bad)
			}},
		{name: "oversize chunk", applied: true, want: []error{ingest.ErrInvalidBlock, schema.ErrBlockTooLarge},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = chunkBlock(t, o, storetest.Multihashes("big", 90_000), cid.Undef)
			}},
		{name: "bad signature", want: []error{ingest.ErrSignature},
			key: func(*chaingen.Chain) crypto.PrivKey { return stranger },
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = chunkBlock(t, o, good, cid.Undef)
			}},
		{name: "tampered after signing", want: []error{ingest.ErrSignature, schema.ErrInvalidSignature},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = chunkBlock(t, o, good, cid.Undef)
			},
			after: func(o *overlay) {
				// Re-encode with other Metadata and the old signature.
				ad, err := schema.DecodeAdvertisement(o.head, o.blocks[o.head])
				if err != nil {
					panic(err)
				}
				ad.Metadata = []byte{0x09, 0x00}
				block, c, err := ad.Encode()
				if err != nil {
					panic(err)
				}
				o.blocks[c], o.head = block, c
			}},
		{name: "unsigned", want: []error{ingest.ErrSignature, schema.ErrNoSignature},
			key: func(*chaingen.Chain) crypto.PrivKey { return nil },
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = chunkBlock(t, o, good, cid.Undef)
			}},
		{name: "hanging publisher", applied: true, want: []error{ingest.ErrFetch, context.DeadlineExceeded},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				o.hang = chunkBlock(t, o, good[20:], cid.Undef)
				ad.Entries = chunkBlock(t, o, good[:20], o.hang)
			}},
		{name: "corrupt HAMT node", applied: true, want: []error{ingest.ErrInvalidBlock, schema.ErrHashMismatch},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = hamtEntries(t, o, deep, good)
				_, children := hamtDepth(t, o, ad.Entries)
				c := children[len(children)-1]
				o.blocks[c] = bytes.Replace(o.blocks[c], []byte{0xf5}, []byte{0xf4}, 1) // a true value false
			}},
		{name: "entries neither chunk nor HAMT", applied: true, want: []error{ingest.ErrUnsupportedEntries},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = rawBlock(t, o, schema.DagCBOR, []byte{0xa1, 0x61, 'x', 0x01}) // {"x": 1}
			}},
		{name: "entries depth limit", applied: true, want: []error{ingest.ErrDepthLimit},
			opts: []ingest.Option{ingest.WithDepthLimits(1000, 2)},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				c := chunkBlock(t, o, good[20:], cid.Undef)
				c = chunkBlock(t, o, good[10:20], c)
				ad.Entries = chunkBlock(t, o, good[:10], c)
			}},
		{name: "missing block", applied: true, want: []error{ingest.ErrFetch, chaingen.ErrNotFound},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries, _ = cid.Prefix{Version: 1, Codec: schema.DagJSON, MhType: multihash.SHA2_256, MhLength: -1}.Sum([]byte("{}"))
			}},
		{name: "ad hash mismatch", want: []error{ingest.ErrInvalidBlock, schema.ErrHashMismatch},
			after: func(o *overlay) {
				b := bytes.Clone(o.blocks[o.head])
				b[len(b)/2] ^= 1
				o.blocks[o.head] = b
			}},
		{name: "undecodable ad", want: []error{ingest.ErrInvalidBlock, schema.ErrMalformed},
			after: func(o *overlay) {
				o.head, _ = cid.Prefix{Version: 1, Codec: schema.DagJSON, MhType: multihash.SHA2_256, MhLength: -1}.Sum([]byte("[1,2]"))
				o.blocks[o.head] = []byte("[1,2]")
			}},
		{name: "entries of an unknown codec", applied: true, want: []error{ingest.ErrInvalidBlock, schema.ErrUnsupportedCodec},
			edit: func(t *testing.T, ad *schema.Advertisement, o *overlay) {
				ad.Entries = rawBlock(t, o, cid.DagProtobuf, []byte{0x0a, 0x00})
			}},
		{name: "ad of an unknown codec", want: []error{ingest.ErrInvalidBlock, schema.ErrUnsupportedCodec},
			after: func(o *overlay) {
				o.head, _ = cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.SHA2_256, MhLength: -1}.Sum([]byte("raw bytes"))
				o.blocks[o.head] = []byte("raw bytes")
			}},
		{name: "ad depth limit", want: []error{ingest.ErrDepthLimit},
			opts: []ingest.Option{ingest.WithDepthLimits(8, 100)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bad := generate(t, chaingen.Config{Seed: 300, Ads: 10, MhsPerAd: 20, ChunkSize: 10, RemoveEvery: 4})
			// Within every limit the cases set.
			other := generate(t, chaingen.Config{Seed: 301, Ads: 6, MhsPerAd: 20, ChunkSize: 20})
			key := bad.ProviderKey
			if tc.key != nil {
				key = tc.key(bad)
			}
			o := topAd(t, bad, key, func(ad *schema.Advertisement, o *overlay) {
				if tc.edit != nil {
					tc.edit(t, ad, o)
				}
			})
			if tc.after != nil {
				tc.after(o)
			}
			st := memory.New()
			defer st.Close()
			srcs := newSources()
			srcs.set(bad.Publisher, o)
			srcs.set(other.Publisher, other.Source())
			opts := append([]ingest.Option{ingest.WithRequestTimeout(200 * time.Millisecond), ingest.WithBackoff(time.Hour, time.Hour)}, tc.opts...)
			ing := newIngester(t, st, newDS(), srcs, opts...)
			done := make(chan error)
			go func() { done <- ing.Run(ctx) }()
			if err := ing.Announce(bad.Publisher, testAddrs, o.head); err != nil {
				t.Fatal(err)
			}
			if err := ing.Announce(other.Publisher, testAddrs, other.Head()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "both walks", func() bool {
				b, _ := ing.Status(bad.Publisher)
				g, _ := ing.Status(other.Publisher)
				return b.LastError != nil && g.LastHead.Equals(other.Head())
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			s, _ := ing.Status(bad.Publisher)
			for _, want := range tc.want {
				if !errors.Is(s.LastError, want) {
					t.Errorf("error %v\ndoes not wrap %v", s.LastError, want)
				}
			}
			t.Logf("error: %v", s.LastError)
			equalModel(t, other.Model(), providerView{st, other.Provider})
			if tc.applied {
				equalModel(t, bad.Model(), providerView{st, bad.Provider})
				if s.Pending != 1 || !s.LastHead.Equals(cid.Undef) || !s.Head.Equals(o.head) {
					t.Errorf("stalled walk status %+v", s)
				}
				info, err := st.Provider(context.Background(), bad.Provider)
				if err != nil {
					t.Fatal(err)
				}
				if info.LastError == "" || info.LastErrorTime.IsZero() || !info.LastAdvertisement.Equals(bad.Head()) {
					t.Errorf("provider record %+v", info)
				}
			} else {
				equalModel(t, bad.ModelAt(-1), providerView{st, bad.Provider})
				if _, err := st.Provider(context.Background(), bad.Provider); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("provider record of a walk that applied nothing: %v", err)
				}
			}
		})
	}
}

// WithUnsignedAds accepts unsigned ads, but still rejects wrong signatures.
func TestUnsignedAllowed(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 400, Ads: 3, MhsPerAd: 4})
	o := topAd(t, chain, nil, func(ad *schema.Advertisement, o *overlay) {})
	st := memory.New()
	defer st.Close()
	srcs := newSources()
	srcs.set(chain.Publisher, o)
	ing := newIngester(t, st, newDS(), srcs, ingest.WithUnsignedAds())
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, o.head); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
}
