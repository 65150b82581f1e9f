package publishernode_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"time"

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

// A publisher node in process: two generated publishers, each on its own
// listener, whose signed heads an IPNI client reads over ipnisync HTTP;
// each head is the publisher's ground truth.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := publishernode.DefaultConfig()
	cfg.Publishers, cfg.InitialAds, cfg.Entries, cfg.ChunkSize = 2, 3, 10, 5
	cfg.Interval = time.Hour // no new ad during the example
	var lns []net.Listener
	for range cfg.Publishers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		lns = append(lns, ln)
	}
	node, err := publishernode.New(ctx, cfg, publishernode.Listeners{Publishers: lns})
	if err != nil {
		panic(err)
	}
	defer node.Close()
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()

	// The publishers listen on loopback, which only a private pool's dial
	// policy allows.
	private, _ := netpolicy.New(netpolicy.AllowPrivate())
	for i, pub := range node.Publishers() {
		c, err := ipnisync.NewURL(node.Addrs().PublisherURL(i), pub.ID(), ipnisync.WithDialPolicy(private))
		if err != nil {
			panic(err)
		}
		head, err := c.Head(ctx) // GET /ipni/v1/ad/head, signature checked
		c.Close()
		if err != nil {
			panic(err)
		}
		tr := pub.Truth(false)
		fmt.Println("publisher", i, "head is the truth's:", head.String() == tr.Head, "ads:", tr.Ads, "multihashes:", tr.Multihashes)
	}

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// publisher 0 head is the truth's: true ads: 3 multihashes: 30
	// publisher 1 head is the truth's: true ads: 3 multihashes: 30
	// stopped: <nil>
}
