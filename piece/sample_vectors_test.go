package piece_test

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/piecetest"
)

// Fixed vectors for the sample's hash formulas. A store's reservoirs are
// ordered by [piece.PayloadHash] (piece/redis keeps [piece.PayloadKey]s as
// its members), and a sample request's answer by the seed score of
// [piece.Choose], so either formula changing silently reorders every
// reservoir already written and every answer already given for a seed.
//
// The expected values were computed once, outside Go, with Python's
// hashlib from the documented formulas over the binary forms of the
// inputs, and are frozen here:
//
//	PayloadHash = uint64be(SHA-256(u32be(len(P)) ‖ P ‖ u32be(len(C)) ‖ C ‖ X)[:8])
//	seed score  = uint64be(SHA-256(seed ‖ 0x00 ‖ X)[:8])
//
// with P the provider's peer ID bytes, C the piece's binary CID and X the
// payload's binary CID (for a CIDv0, its multihash).
var (
	vecProviders = []string{
		"12D3KooWGT2YpdT4ARd8wWJigsREMHZgZZVJft6gRDiDrfPboNak", // Ed25519, identity multihash
		"12D3KooWLNECf3n6ymmcXxvzmgkBsUC1876GfYLUZhxWdotqNFp7",
		"QmRVty3rEVRXUHp6AjvWQ39kMHyfbgWtFPfu1FjZscMN1d", // sha2-256 multihash, as RSA keys
	}
	vecPieces = []string{
		"baga6ea4seaqhotmbp4trjkitw24tduqknn6zaxhd2xvwn5wmibutcqzilnbjckq",
		"baga6ea4seaqfqkke2xyg5ycuuheb56kptrfgdkbf3yuv6fdumojxjwd2ff2y2ga",
	}
	vecPayloads = []string{
		"bafkreialkdaws3doa32zmdlfouluso6xcj2nr6vkgusoqf4fmm5z44uo4u", // raw
		"bafkreido5jtjx42wdle36uclo2b5kirgoumb4tbvniorl6nyk7bo2mgfwe",
		"bafkreigsvanqwpi6uwf3v7gv4pqq43wbvrga67uqd3ghz7642wrquh2bni",
		"bafkreifig6zdpbkc46figrcgf5bfun5gyvk7apmehkir3eqa2kvsuwl52u",
		"QmNWBLEhbMPayg7n96wHaKo4WXYP396yGMcEXK6AnyJ64u",              // CIDv0
		"bafybeiacodne3kwfctzqx3hfpcfipll3qahvsr3nbv7g64guwyp3yt26ty", // dag-pb, the same multihash
	}
	payloadHashVectors = []struct {
		provider, piece, payload int // indexes into the lists above
		hash                     uint64
	}{
		{0, 0, 0, 0xc180c3b4370fc8f7},
		{0, 0, 1, 0xbdd7b60b3b55615d},
		{0, 0, 2, 0xfc7c2e3f9f1c6d2a},
		{0, 0, 3, 0xc8b6a0ccba21d79a},
		{0, 0, 4, 0x64489a80a8439179},
		{0, 0, 5, 0x894ad5d08f5a9118},
		{1, 0, 0, 0xe0a8a63c729b4983},
		{0, 1, 0, 0x2103499aad017555},
		{2, 1, 4, 0xf0a21f9e399c2d7c},
		{2, 1, 5, 0x44996c22e5353b77},
	}
	// The three payloads of vecPayloads with the smallest keys for
	// (vecProviders[0], vecPieces[0]), in ascending order.
	bottom3 = []int{4, 5, 1}
	// Choose's order of all of vecPayloads (as kept, in that order) for a
	// seed, as indexes into vecPayloads.
	chooseVectors = []struct {
		seed  string
		order []int
	}{
		{"a", []int{0, 2, 3, 5, 4, 1}},
		{"seed-1", []int{2, 3, 0, 5, 4, 1}},
	}
)

func vecProvider(t *testing.T, i int) peer.ID {
	t.Helper()
	p, err := peer.Decode(vecProviders[i])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func vecCID(t *testing.T, s string) cid.Cid {
	t.Helper()
	c, err := cid.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func vecCIDs(t *testing.T, idx []int) []cid.Cid {
	t.Helper()
	out := make([]cid.Cid, len(idx))
	for i, x := range idx {
		out[i] = vecCID(t, vecPayloads[x])
	}
	return out
}

func TestPayloadHashVectors(t *testing.T) {
	for _, v := range payloadHashVectors {
		p, pc, x := vecProvider(t, v.provider), vecCID(t, vecPieces[v.piece]), vecCID(t, vecPayloads[v.payload])
		if got := piece.PayloadHash(p, pc, x); got != v.hash {
			t.Errorf("PayloadHash(%s, %s, %s) = %#016x, want %#016x", p, pc, x, got, v.hash)
		}
		want := binary.BigEndian.AppendUint64(nil, v.hash)
		want = append(want, x.Bytes()...)
		key := piece.PayloadKey(p, pc, x)
		if key != string(want) {
			t.Errorf("PayloadKey(%s, %s, %s) = %x, want %x", p, pc, x, key, want)
		}
		if back, err := piece.PayloadFromKey(key); err != nil || !back.Equals(x) {
			t.Errorf("PayloadFromKey(PayloadKey(…, %s)) = %v, %v", x, back, err)
		}
	}
}

// docPayloadHash is the formula of PayloadHash's documentation, written
// out again without piece's code.
func docPayloadHash(p peer.ID, pc, x cid.Cid) uint64 {
	var in []byte
	in = binary.BigEndian.AppendUint32(in, uint32(len([]byte(p))))
	in = append(in, []byte(p)...)
	in = binary.BigEndian.AppendUint32(in, uint32(len(pc.Bytes())))
	in = append(in, pc.Bytes()...)
	in = append(in, x.Bytes()...)
	sum := sha256.Sum256(in)
	return binary.BigEndian.Uint64(sum[:8])
}

// The documented formula over many more inputs than the frozen vectors.
func TestPayloadHashFormula(t *testing.T) {
	for i := range 4 {
		p := piecetest.Provider(i)
		for j := range 4 {
			pc := piecetest.PieceCID(j)
			for _, x := range piecetest.Payloads(100*i+10*j, 50) {
				if got, want := piece.PayloadHash(p, pc, x), docPayloadHash(p, pc, x); got != want {
					t.Fatalf("PayloadHash(%s, %s, %s) = %#016x, the documented formula gives %#016x", p, pc, x, got, want)
				}
			}
		}
	}
}

func TestSmallestKeysVector(t *testing.T) {
	p, pc := vecProvider(t, 0), vecCID(t, vecPieces[0])
	all := vecCIDs(t, []int{0, 1, 2, 3, 4, 5})
	offer := append(slices.Clone(all), all[4], all[1], all[0]) // repeats count once
	keys := piece.SmallestKeys(p, pc, offer, 3)
	var got []cid.Cid
	for _, k := range keys {
		c, err := piece.PayloadFromKey(k)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	if want := vecCIDs(t, bottom3); !slices.Equal(got, want) {
		t.Errorf("SmallestKeys(…, 3) = %v, want %v", got, want)
	}
}

func TestChooseVectors(t *testing.T) {
	kept := vecCIDs(t, []int{0, 1, 2, 3, 4, 5})
	for _, v := range chooseVectors {
		want := vecCIDs(t, v.order)
		if got := piece.Choose(kept, v.seed, len(kept)); !slices.Equal(got, want) {
			t.Errorf("Choose(kept, %q) = %v, want %v", v.seed, got, want)
		}
		for n := range len(kept) {
			if got := piece.Choose(kept, v.seed, n); !slices.Equal(got, want[:n]) {
				t.Errorf("Choose(kept, %q, %d) = %v, want %v", v.seed, n, got, want[:n])
			}
		}
	}
}
