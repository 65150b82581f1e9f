package keyspace_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

func testMH(t testing.TB, i int) multihash.Multihash {
	mh, err := multihash.Sum([]byte{byte(i), byte(i >> 8), 7}, multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return mh
}

const testPeer = "12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA"

func sampleBatch(t testing.TB) keyspace.Batch {
	id, err := peer.Decode(testPeer)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cid.Decode("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy")
	v := store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12, 0}}
	return keyspace.Batch{
		Writer: "ingest-1", Stream: 99, Epoch: 3, Seq: 17, Drained: true,
		Ops: []keyspace.Op{
			{Kind: keyspace.OpPut, Value: v, Multihashes: []multihash.Multihash{testMH(t, 1), testMH(t, 2)}},
			{Kind: keyspace.OpRemove, Value: store.Value{ProviderID: id, ContextID: []byte("ctx")}, Multihashes: []multihash.Multihash{testMH(t, 2)}},
			{Kind: keyspace.OpUpdateMetadata, Value: store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{1}}},
			{Kind: keyspace.OpRemoveContext, Value: store.Value{ProviderID: id, ContextID: []byte("other")}},
			{Kind: keyspace.OpRemoveProvider, Value: store.Value{ProviderID: id}},
			{Kind: keyspace.OpPutProvider, Provider: &store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id}, LastAdvertisement: c}},
			{Kind: keyspace.OpDeleteProvider, Value: store.Value{ProviderID: id}},
		},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	b := sampleBatch(t)
	enc, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := keyspace.DecodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	// Normalise what JSON and empty slices change.
	if got.Writer != b.Writer || got.Stream != b.Stream || got.Epoch != b.Epoch || got.Seq != b.Seq || got.Drained != b.Drained || len(got.Ops) != len(b.Ops) {
		t.Fatalf("header: got %+v, want %+v", got, b)
	}
	for i := range b.Ops {
		w, g := b.Ops[i], got.Ops[i]
		if w.Kind != g.Kind || !bytes.Equal(w.Value.ContextID, g.Value.ContextID) || !bytes.Equal(w.Value.Metadata, g.Value.Metadata) || w.Value.ProviderID != g.Value.ProviderID {
			t.Errorf("op %d: got %+v, want %+v", i, g, w)
		}
		if len(w.Multihashes) != len(g.Multihashes) {
			t.Errorf("op %d: %d multihashes, want %d", i, len(g.Multihashes), len(w.Multihashes))
		}
		for j := range w.Multihashes {
			if !bytes.Equal(w.Multihashes[j], g.Multihashes[j]) {
				t.Errorf("op %d multihash %d differs", i, j)
			}
		}
		if w.Provider != nil && (g.Provider == nil || !reflect.DeepEqual(w.Provider.LastAdvertisement, g.Provider.LastAdvertisement) || w.Provider.AddrInfo.ID != g.Provider.AddrInfo.ID) {
			t.Errorf("op %d: provider %+v, want %+v", i, g.Provider, w.Provider)
		}
	}
	// Header plus a separately encoded ops section is the same bytes.
	hdr, _ := b.AppendHeader(nil)
	both, err := keyspace.AppendOps(hdr, b.Ops...)
	if err != nil || !bytes.Equal(both, enc) {
		t.Fatalf("header+ops differs from AppendBinary (err %v)", err)
	}
}

func TestBatchRejects(t *testing.T) {
	b := sampleBatch(t)
	enc, _ := b.AppendBinary(nil)
	cases := map[string][]byte{
		"empty":       nil,
		"magic":       append([]byte("XXXX"), enc[4:]...),
		"truncated":   enc[:len(enc)-3],
		"trailing":    append(append([]byte{}, enc...), 0),
		"header only": enc[:20],
	}
	for name, data := range cases {
		if _, err := keyspace.DecodeBatch(data); !errors.Is(err, keyspace.ErrInvalidBatch) {
			t.Errorf("%s: err = %v, want ErrInvalidBatch", name, err)
		}
	}
	// An op the store would refuse does not encode.
	bad := keyspace.Batch{Writer: "w", Ops: []keyspace.Op{{Kind: keyspace.OpPut, Value: store.Value{ProviderID: "x"}, Multihashes: []multihash.Multihash{testMH(t, 1)}}}}
	if _, err := bad.AppendBinary(nil); !errors.Is(err, keyspace.ErrInvalidBatch) || !errors.Is(err, store.ErrInvalidValue) {
		t.Errorf("put without a context ID: err = %v", err)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	b := sampleBatch(f)
	enc, _ := b.AppendBinary(nil)
	f.Add(enc)
	f.Add([]byte("IKSB\x01\x01w\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := keyspace.DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, keyspace.ErrInvalidBatch) {
				t.Fatalf("error %v does not wrap ErrInvalidBatch", err)
			}
			return
		}
		// What decodes re-encodes and decodes to the same ops.
		again, err := got.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded batch does not encode: %v", err)
		}
		got2, err := keyspace.DecodeBatch(again)
		if err != nil || len(got2.Ops) != len(got.Ops) || got2.Seq != got.Seq {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
