package publishernode_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/store/memory"
)

// A generated publisher is served over HTTP and ingested; the store then
// holds exactly its ground truth.
func Example() {
	ctx := context.Background()
	pub, err := publishernode.NewPublisher(publishernode.Spec{Seed: 1, Ads: 5, Entries: 10, ChunkSize: 4, RemoveEvery: 3})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(pub) // /ipni/v1/ad/... and /truth
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	addr := multiaddr.StringCast("/ip4/" + host + "/tcp/" + port + "/http")

	st := memory.New()
	defer st.Close()
	// The publisher listens on loopback, which only a private pool's dial
	// policy allows.
	pool, _ := netpolicy.New(netpolicy.AllowPrivate())
	ing, err := ingest.New(st, dssync.MutexWrap(datastore.NewMapDatastore()),
		func(p peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
			return ipnisync.New(peer.AddrInfo{ID: p, Addrs: addrs}, ipnisync.WithDialPolicy(pool))
		})
	if err != nil {
		panic(err)
	}
	if err := ing.Sync(ctx, pub.ID(), []multiaddr.Multiaddr{addr}, pub.Head()); err != nil {
		panic(err)
	}
	tr := pub.Truth(false)
	fmt.Println("ads:", tr.Ads, "multihashes:", tr.Multihashes)
	fmt.Println("store equals the truth:", pub.Model().Equal(ctx, st) == nil)
	// Output:
	// ads: 5 multihashes: 30
	// store equals the truth: true
}
