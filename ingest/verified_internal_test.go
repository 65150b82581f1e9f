package ingest

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// The walker finds BlocksVerified through its own wrappers, and only on a
// Syncer that has it.
func TestBlocksVerified(t *testing.T) {
	chain, err := chaingen.Generate(chaingen.Config{Seed: 1, Ads: 1})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ipnisync.New(peer.AddrInfo{ID: chain.Publisher, Addrs: []multiaddr.Multiaddr{
		multiaddr.StringCast("/ip4/127.0.0.1/tcp/9/http"),
	}}, ipnisync.WithDialPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg, err := newWalkerConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		src  Syncer
		want bool
	}{
		{"ipnisync client", cl, true},
		{"limited client", newLimitedSyncer(cl, cfg), true},
		{"metered limited client", meteredSyncer{Syncer: newLimitedSyncer(cl, cfg), sl: &slot{}}, true},
		{"chain source", chain.Source(), false},
		{"limited chain source", newLimitedSyncer(chain.Source(), cfg), false},
		{"metered chain source", meteredSyncer{Syncer: chain.Source(), sl: &slot{}}, false},
	} {
		if got := blocksVerified(c.src); got != c.want {
			t.Errorf("%s: blocksVerified %v, want %v", c.name, got, c.want)
		}
	}
}
