package storetest

// Subtests of values: Put, Get, UpdateMetadata and the removals.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

func testPutGet(t *testing.T, s store.Store) {
	v := value("p1", "ctx1", "md1")
	mhs := Multihashes("putget", 100)
	mustPut(t, s, v, mhs...)
	for _, mh := range mhs {
		expectValues(t, s, mh, v)
	}
	if got := mustGet(t, s, Multihash("absent", 0)); len(got) != 0 {
		t.Fatalf("Get of absent multihash = %s, want none", fmtValues(got))
	}
	// An empty Put is allowed and writes nothing.
	mustPut(t, s, value("p1", "ctx2", "md2"))

	// Put keeps nothing of its arguments: a caller may reuse the memory of
	// the multihashes (and of the value) once it returns, as an ingester
	// reuses the blocks it decodes them from.
	keys := Multihashes("putget-reused", 50)
	buf := make([]byte, 0, 64*len(keys))
	inBuf := make([]multihash.Multihash, len(keys))
	for i, mh := range keys {
		start := len(buf)
		buf = append(buf, mh...)
		inBuf[i] = buf[start:len(buf):len(buf)]
	}
	rv := value("p2", "ctx-reused", "md-reused")
	put := rv.Clone()
	mustPut(t, s, put, inBuf...)
	copy(buf, bytes.Repeat([]byte{0x12, 0x20}, len(buf)/2)) // sha2-256 multihashes of another digest
	copy(put.ContextID, "xxxxxxxxxx")
	copy(put.Metadata, "yyyyyyyyyy")
	for _, mh := range keys {
		expectValues(t, s, mh, rv)
	}
	if got := mustGet(t, s, inBuf[0]); len(got) != 0 {
		t.Fatalf("Get of the bytes written over a Put's multihash = %s, want none", fmtValues(got))
	}
}

func testPutIdempotent(t *testing.T, s store.Store) {
	v := value("p1", "ctx1", "md1")
	mhs := Multihashes("idem", 10)
	for range 3 {
		mustPut(t, s, v, mhs...)
	}
	mustPut(t, s, v.Clone(), mhs[0], mhs[0], mhs[0])
	for _, mh := range mhs {
		expectValues(t, s, mh, v)
	}
}

func testManyValues(t *testing.T, s store.Store) {
	mh := Multihash("many", 0)
	var want []store.Value
	for p := range 3 {
		for c := range 4 {
			v := value(fmt.Sprint("p", p), fmt.Sprint("ctx", c), fmt.Sprint("md", p, c))
			mustPut(t, s, v, mh, Multihash("many-other", p*10+c))
			want = append(want, v)
		}
	}
	expectValues(t, s, mh, want...)
}

func testCodecIndependent(t *testing.T, s store.Store) {
	mh := Multihash("codec", 0)
	v := value("p1", "ctx1", "md1")
	mustPut(t, s, v, cid.NewCidV1(cid.DagProtobuf, mh).Hash())
	for _, c := range []cid.Cid{cid.NewCidV0(mh), cid.NewCidV1(cid.Raw, mh), cid.NewCidV1(cid.DagCBOR, mh)} {
		expectValues(t, s, c.Hash(), v)
	}
}

func testPutReplacesMetadata(t *testing.T, s store.Store) {
	a, b := Multihashes("replace-a", 5), Multihashes("replace-b", 5)
	mustPut(t, s, value("p1", "ctx1", "old"), a...)
	newer := value("p1", "ctx1", "new")
	mustPut(t, s, newer, b...)
	for _, mh := range append(a, b...) {
		expectValues(t, s, mh, newer)
	}
}

func testUpdateMetadata(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("update", 50)
	v := value("p1", "ctx1", "md-old")
	other := value("p1", "ctx2", "md-other")
	mustPut(t, s, v, mhs...)
	mustPut(t, s, other, mhs[:5]...)
	if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("md-new")); err != nil {
		t.Fatalf("UpdateMetadata: %v", err)
	}
	updated := value("p1", "ctx1", "md-new")
	for i, mh := range mhs {
		if i < 5 {
			expectValues(t, s, mh, updated, other)
		} else {
			expectValues(t, s, mh, updated)
		}
	}
	err := s.UpdateMetadata(ctx, v.ProviderID, []byte("no-such-context"), []byte("x"))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateMetadata of unknown context: %v, want ErrNotFound", err)
	}
	err = s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, make([]byte, store.MaxMetadataLen+1))
	if !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("UpdateMetadata with oversize metadata: %v, want ErrInvalidValue", err)
	}
	expectValues(t, s, mhs[9], updated)
}

func testRemove(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("remove", 10)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p2", "ctx1", "md2")
	mustPut(t, s, v1, mhs...)
	mustPut(t, s, v2, mhs...)
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[:4]...); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for i, mh := range mhs {
		if i < 4 {
			expectValues(t, s, mh, v2)
		} else {
			expectValues(t, s, mh, v1, v2)
		}
	}
	// Removing again, or removing an unknown context, is a no-op.
	if err := s.Remove(ctx, v1.ProviderID, v1.ContextID, mhs[:4]...); err != nil {
		t.Fatalf("Remove again: %v", err)
	}
	if err := s.Remove(ctx, PeerID("nobody"), []byte("x"), mhs...); err != nil {
		t.Fatalf("Remove of unknown value: %v", err)
	}
	expectValues(t, s, mhs[5], v1, v2)
}

func testRemoveProviderContext(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := Multihashes("rpc-old", 20)
	v1 := value("p1", "ctx1", "md1")
	v2 := value("p1", "ctx2", "md2")
	v3 := value("p2", "ctx1", "md3")
	mustPut(t, s, v1, old...)
	mustPut(t, s, v2, old[:10]...)
	mustPut(t, s, v3, old[10:]...)
	if err := s.RemoveProviderContext(ctx, v1.ProviderID, v1.ContextID); err != nil {
		t.Fatalf("RemoveProviderContext: %v", err)
	}
	for i, mh := range old {
		if i < 10 {
			expectValues(t, s, mh, v2)
		} else {
			expectValues(t, s, mh, v3)
		}
	}
	if err := s.UpdateMetadata(ctx, v1.ProviderID, v1.ContextID, []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateMetadata after removal: %v, want ErrNotFound", err)
	}
	// Putting the context again must not resurrect the old multihashes.
	fresh := Multihashes("rpc-new", 3)
	mustPut(t, s, v1, fresh...)
	for _, mh := range fresh {
		expectValues(t, s, mh, v1)
	}
	expectValues(t, s, old[0], v2)
	expectValues(t, s, old[15], v3)
	if err := s.RemoveProviderContext(ctx, PeerID("nobody"), []byte("x")); err != nil {
		t.Fatalf("RemoveProviderContext of unknown context: %v", err)
	}
}

func testRemoveProvider(t *testing.T, s store.Store) {
	ctx := context.Background()
	mhs := Multihashes("rp", 30)
	keep := value("p2", "ctx1", "keep")
	for c := range 5 {
		mustPut(t, s, value("p1", fmt.Sprint("ctx", c), "md"), mhs...)
	}
	mustPut(t, s, keep, mhs[:10]...)
	info := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: PeerID("p1")}}
	if err := s.PutProvider(ctx, info); err != nil {
		t.Fatalf("PutProvider: %v", err)
	}
	if err := s.RemoveProvider(ctx, PeerID("p1")); err != nil {
		t.Fatalf("RemoveProvider: %v", err)
	}
	for i, mh := range mhs {
		if i < 10 {
			expectValues(t, s, mh, keep)
		} else {
			expectValues(t, s, mh)
		}
	}
	if _, err := s.Provider(ctx, PeerID("p1")); err != nil {
		t.Fatalf("RemoveProvider must leave the provider record: %v", err)
	}
	mustPut(t, s, value("p1", "ctx0", "md"), mhs[29])
	expectValues(t, s, mhs[28])
	expectValues(t, s, mhs[29], value("p1", "ctx0", "md"))
}
