package find_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
)

// findPeer returns a deterministic Ed25519 peer ID for i.
func findPeer(tb testing.TB, i int) peer.ID {
	tb.Helper()
	seed := sha256.Sum256(fmt.Appendf(nil, "indexkit scatter test peer %d", i))
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// findMH returns a deterministic sha2-256 multihash for i.
func findMH(tb testing.TB, i int) multihash.Multihash {
	tb.Helper()
	mh, err := multihash.Sum(fmt.Appendf(nil, "indexkit scatter test content %d", i), multihash.SHA2_256, -1)
	if err != nil {
		tb.Fatal(err)
	}
	return mh
}

// findAddrs parses multiaddrs.
func findAddrs(tb testing.TB, ss ...string) []multiaddr.Multiaddr {
	tb.Helper()
	var out []multiaddr.Multiaddr
	for _, s := range ss {
		a, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// findAddrInfo returns a provider with one address derived from i.
func findAddrInfo(tb testing.TB, i int) *peer.AddrInfo {
	tb.Helper()
	return &peer.AddrInfo{ID: findPeer(tb, i), Addrs: findAddrs(tb, fmt.Sprintf("/ip4/10.0.0.%d/tcp/%d/http", i%250+1, 3000+i))}
}

// newHandler returns find.NewHandler(b, opts...), failing tb on error.
func newHandler(tb testing.TB, b find.Backend, opts ...find.HandlerOption) *find.Handler {
	tb.Helper()
	h, err := find.NewHandler(b, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// newStoreBackend returns find.NewStoreBackend(s, opts...), failing tb on
// error.
func newStoreBackend(tb testing.TB, s store.Store, opts ...find.StoreBackendOption) *find.StoreBackend {
	tb.Helper()
	b, err := find.NewStoreBackend(s, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
