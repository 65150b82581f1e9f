package routing_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

// testPeer returns a deterministic Ed25519 peer ID for i.
func testPeer(tb testing.TB, i int) peer.ID {
	tb.Helper()
	seed := sha256.Sum256(fmt.Appendf(nil, "indexkit routing test peer %d", i))
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

// testCID returns a deterministic raw CIDv1 for i.
func testCID(tb testing.TB, i int) cid.Cid {
	tb.Helper()
	mh, err := multihash.Sum(fmt.Appendf(nil, "indexkit routing test content %d", i), multihash.SHA2_256, -1)
	if err != nil {
		tb.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, mh)
}

func maddrs(tb testing.TB, ss ...string) []multiaddr.Multiaddr {
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

// fakeBackend is a find.Backend that yields results then err, and counts
// its calls. When gate is set, Find waits for it to be closed after
// yielding the first result.
type fakeBackend struct {
	results []find.ProviderResult
	err     error
	gate    chan struct{}

	provider    find.ProviderInfo
	providerErr error

	finds, providers atomic.Int64
}

func (b *fakeBackend) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		b.finds.Add(1)
		for i, r := range b.results {
			if !yield(r, nil) {
				return
			}
			if i == 0 && b.gate != nil {
				select {
				case <-b.gate:
				case <-ctx.Done():
					return
				}
			}
		}
		if b.err != nil {
			yield(find.ProviderResult{}, b.err)
		}
	}
}

func (b *fakeBackend) Providers(context.Context) ([]find.ProviderInfo, error) {
	return nil, nil
}

func (b *fakeBackend) Provider(_ context.Context, id peer.ID) (find.ProviderInfo, error) {
	b.providers.Add(1)
	if b.providerErr != nil {
		return b.provider, b.providerErr
	}
	if b.provider.AddrInfo.ID != id {
		return find.ProviderInfo{}, fmt.Errorf("fake: %w", find.ErrNotFound)
	}
	return b.provider, nil
}
