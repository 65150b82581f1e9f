package publishernode

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/piece"
)

// TestPieces: with PieceContextEvery, GET /truth?pieces=1 lists the pieces
// of the published ads, some named in their ContextID, each with payloads
// that are the payload CIDs of multihashes of the truth; without it, the
// chain is the one chaingen generates without the option (same head), and
// every piece comes from graphsync metadata.
func TestPieces(t *testing.T) {
	spec := Spec{Seed: 7, Ads: 8, Entries: 4, ChunkSize: 3, RemoveEvery: 10, UpdateEvery: 7, PieceContextEvery: 3}
	p := newPublisher(t, spec)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	var tr Truth
	getJSON(t, srv.URL+"/truth?pieces=1&entries=1", &tr)
	if len(tr.Pieces) == 0 {
		t.Fatal("no pieces in /truth?pieces=1")
	}
	mhs := map[string]bool{}
	for _, e := range tr.Entries {
		c, _ := piece.PayloadCID(mhBytes(e.Multihash))
		mhs[c.String()] = true
	}
	inContext := 0
	for _, pc := range tr.Pieces {
		c, err := cid.Decode(pc.Piece)
		if err != nil || !piece.IsPieceCID(c) {
			t.Fatalf("piece %q: not a piece CID (%v)", pc.Piece, err)
		}
		if pc.Provider != tr.Publisher || len(pc.Payloads) == 0 {
			t.Fatalf("piece %+v: want provider %s and payloads", pc, tr.Publisher)
		}
		for _, pl := range pc.Payloads {
			if !mhs[pl] {
				t.Fatalf("piece %s: payload %s is no multihash of the truth", pc.Piece, pl)
			}
		}
		if pc.InContextID {
			inContext++
		}
	}
	if inContext == 0 || inContext == len(tr.Pieces) {
		t.Fatalf("%d of %d pieces named in a ContextID: want some, not all", inContext, len(tr.Pieces))
	}
	var plain Truth
	getJSON(t, srv.URL+"/truth", &plain)
	if plain.Pieces != nil {
		t.Fatalf("/truth without pieces=1 lists %d pieces", len(plain.Pieces))
	}

	// Off, the chain is chaingen's without the option.
	spec.PieceContextEvery = 0
	off := newPublisher(t, spec)
	want, err := chaingen.Generate(spec.chainConfig(spec.Ads))
	if err != nil {
		t.Fatal(err)
	}
	if !off.Head().Equals(want.Head()) {
		t.Fatalf("head %s without PieceContextEvery, want chaingen's %s", off.Head(), want.Head())
	}
	if off.Head().Equals(p.Head()) {
		t.Fatal("PieceContextEvery changed nothing")
	}
	for _, pc := range off.Pieces() {
		if pc.InContextID {
			t.Fatalf("piece %s in a ContextID without PieceContextEvery", pc.Piece)
		}
	}
}

// TestAdvertised: a faulty publisher's Advertised lists the multihashes of
// the honest chain of the same seed (its Truth lists none), and an honest
// publisher's is its Truth.
func TestAdvertised(t *testing.T) {
	spec := Spec{Seed: 9, Ads: 3, Entries: 4, ChunkSize: 2}
	honest := newPublisher(t, spec)
	ht, err := honest.Advertised(true)
	if err != nil || ht.Digest != honest.Truth(false).Digest || len(ht.Entries) != 12 {
		t.Fatalf("honest Advertised: %d entries, %v; want its truth of 12", len(ht.Entries), err)
	}
	for _, f := range []Fault{BadSignature, CorruptBlocks} {
		spec.Fault = f
		bad := newPublisher(t, spec)
		if n := bad.Truth(true).Multihashes; n != 0 {
			t.Fatalf("%s: truth of %d multihashes, want 0", f, n)
		}
		at, err := bad.Advertised(true)
		if err != nil {
			t.Fatal(err)
		}
		if at.Digest != ht.Digest || at.Fault != f || at.Head != bad.Head().String() {
			t.Fatalf("%s: Advertised %+v, want the honest chain's entries under its own head", f, at)
		}
		if len(bad.Pieces()) != 0 {
			t.Fatalf("%s: pieces listed", f)
		}
	}
	spec = Spec{Seed: 9, Ads: 1, Fault: HugeChunks}
	huge := newPublisher(t, spec)
	at, err := huge.Advertised(false)
	if err != nil || at.Multihashes != HugeChunkEntries {
		t.Fatalf("huge: Advertised %d multihashes, %v; want %d", at.Multihashes, err, HugeChunkEntries)
	}
	if !slices.Equal([]Fault{at.Fault}, []Fault{HugeChunks}) {
		t.Fatalf("huge: fault %q", at.Fault)
	}
}
