package piece_test

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
	"github.com/multiformats/go-varint"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/piece"
)

func pieceV1(b byte) cid.Cid {
	d := sha256.Sum256([]byte{b})
	d[31] &= 0x3f
	mh, _ := multihash.Encode(d[:], piece.MhSHA256Trunc254Padded)
	return cid.NewCidV1(piece.CodecFilCommitmentUnsealed, mh)
}

func pieceV2(b byte) cid.Cid {
	d := sha256.Sum256([]byte{b})
	digest := append(varint.ToUvarint(1234), 30)
	digest = append(digest, d[:]...)
	mh, _ := multihash.Encode(digest, piece.MhFr32SHA256Trunc254Padbintree)
	return cid.NewCidV1(cid.Raw, mh)
}

func meta(t *testing.T, ps ...metadata.Protocol) []byte {
	t.Helper()
	m, err := metadata.New(ps...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Encode()
}

func TestIsPieceCID(t *testing.T) {
	raw := cid.NewCidV1(cid.Raw, must(multihash.Sum([]byte("x"), multihash.SHA2_256, -1)))
	wrongLen, _ := multihash.Encode(make([]byte, 31), piece.MhSHA256Trunc254Padded)
	for _, tc := range []struct {
		name string
		c    cid.Cid
		want bool
	}{
		{"v1 commP", pieceV1(1), true},
		{"v2 piece CID", pieceV2(1), true},
		{"raw sha2-256", raw, false},
		{"commP codec, 31-byte digest", cid.NewCidV1(piece.CodecFilCommitmentUnsealed, wrongLen), false},
		{"undef", cid.Undef, false},
	} {
		if got := piece.IsPieceCID(tc.c); got != tc.want {
			t.Errorf("%s: IsPieceCID = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPieceOf(t *testing.T) {
	p1, p2, p3 := pieceV1(1), pieceV1(2), pieceV2(3)
	gs := func(p cid.Cid) metadata.Protocol {
		return metadata.GraphsyncFilecoinV1{PieceCID: p, FastRetrieval: true}
	}
	notPiece := cid.NewCidV1(cid.DagCBOR, must(multihash.Sum([]byte("y"), multihash.SHA2_256, -1)))
	// [cid, size]: the uint (bytes 1..5: 1a 00 10 00 00) moved after the link.
	ctx := chaingen.PieceContextID(1<<20, p2)
	swapped := append(append([]byte{0x82}, ctx[6:]...), ctx[1:6]...)
	for _, tc := range []struct {
		name      string
		contextID []byte
		meta      []byte
		want      cid.Cid
	}{
		{"graphsync alone", []byte("ctx"), meta(t, gs(p1)), p1},
		{"bitswap then graphsync", []byte("ctx"), meta(t, metadata.Bitswap{}, gs(p1)), p1},
		{"graphsync then gateway", []byte("ctx"), meta(t, gs(p1), metadata.IPFSGatewayHTTP{}), p1},
		{"bitswap, graphsync, gateway, piece-http", []byte("ctx"), meta(t, metadata.Bitswap{}, gs(p1), metadata.IPFSGatewayHTTP{}, metadata.FilecoinPieceHTTP{}), p1},
		{"bitswap only", []byte("ctx"), meta(t, metadata.Bitswap{}), cid.Undef},
		{"graphsync naming a non-piece CID", []byte("ctx"), meta(t, gs(notPiece)), cid.Undef},
		{"malformed metadata", []byte("ctx"), []byte{0x90, 0x12, 0xff}, cid.Undef},
		{"ContextID [size, piece]", chaingen.PieceContextID(1<<20, p2), meta(t, metadata.Bitswap{}), p2},
		{"ContextID [piece, size]", swapped, nil, p2},
		{"ContextID wins over metadata", chaingen.PieceContextID(1<<35, p2), meta(t, gs(p1)), p2},
		{"ContextID v2 piece CID bytes", p3.Bytes(), nil, p3},
		{"ContextID [size, v2 piece]", chaingen.PieceContextID(7, p3), nil, p3},
		{"ContextID with trailing byte, metadata piece", append(chaingen.PieceContextID(1, p2), 0), meta(t, gs(p1)), p1},
		{"ContextID non-piece CID bytes", notPiece.Bytes(), nil, cid.Undef},
		{"ContextID non-shortest size", append([]byte{0x82, 0x18, 0x05}, chaingen.PieceContextID(5, p2)[2:]...), nil, cid.Undef},
		{"opaque ContextID, no metadata", []byte{1, 2, 3}, nil, cid.Undef},
	} {
		got, ok := piece.PieceOf(tc.contextID, tc.meta)
		if ok != tc.want.Defined() || !got.Equals(tc.want) {
			t.Errorf("%s: PieceOf = %v, %v; want %v", tc.name, got, ok, tc.want)
		}
	}
}

func TestPayloadCID(t *testing.T) {
	mh := must(multihash.Sum([]byte("block"), multihash.SHA2_256, -1))
	c, ok := piece.PayloadCID(mh)
	if !ok || c.Type() != cid.Raw || c.Version() != 1 || !bytes.Equal(c.Hash(), mh) {
		t.Fatalf("PayloadCID = %v, %v; want CIDv1 raw of the multihash", c, ok)
	}
	if _, ok := piece.PayloadCID([]byte{0x12, 0x20, 1}); ok {
		t.Fatal("PayloadCID accepted a truncated multihash")
	}
}

// FuzzPieceOf: no input panics, and whatever is returned is a piece CID
// that the ContextID or the metadata really carries.
func FuzzPieceOf(f *testing.F) {
	p1, p3 := pieceV1(9), pieceV2(9)
	m, _ := metadata.New(metadata.Bitswap{}, metadata.GraphsyncFilecoinV1{PieceCID: p1}, metadata.IPFSGatewayHTTP{})
	f.Add(chaingen.PieceContextID(1<<30, p1), m.Encode())
	f.Add(p3.Bytes(), []byte(nil))
	f.Add([]byte{0x82, 0x00, 0xd8, 0x2a, 0x41, 0x00}, []byte{0x90, 0x12, 0xa0})
	f.Add([]byte{}, m.Encode())
	f.Fuzz(func(t *testing.T, contextID, meta []byte) {
		got, ok := piece.PieceOf(contextID, meta)
		if !ok {
			if got.Defined() {
				t.Fatalf("PieceOf returned %v with false", got)
			}
			return
		}
		if !piece.IsPieceCID(got) {
			t.Fatalf("PieceOf returned %v, not a piece CID", got)
		}
		if !bytes.Contains(contextID, got.Bytes()) && !bytes.Contains(meta, got.Bytes()) {
			t.Fatalf("PieceOf returned %v, found in neither input", got)
		}
	})
}
