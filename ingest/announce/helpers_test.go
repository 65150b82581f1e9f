package announce_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

func mustCID(t testing.TB, s string) cid.Cid {
	t.Helper()
	c, err := cid.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testCID returns a dag-json CIDv1 of sha2-256(seed).
func testCID(t testing.TB, seed string) cid.Cid {
	t.Helper()
	sum := sha256.Sum256([]byte(seed))
	mh, err := multihash.Encode(sum[:], multihash.SHA2_256)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.DagJSON, mh)
}

func mustPeer(t testing.TB, s string) peer.ID {
	t.Helper()
	p, err := peer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newPeer returns a fresh Ed25519 peer ID.
func newPeer(t testing.TB) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustAddrs(t testing.TB, ss ...string) []multiaddr.Multiaddr {
	t.Helper()
	out := make([]multiaddr.Multiaddr, len(ss))
	for i, s := range ss {
		a, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a
	}
	return out
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
