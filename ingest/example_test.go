package ingest_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/store/memory"
)

// An indexer's ingest loop: announces come in, Run walks each publisher's
// chain and puts its advertisements into the store.
func Example() {
	// A publisher's chain of 4 signed ads, 100 multihashes each; the last
	// one removes an earlier context. It is served over ipnisync HTTP on a
	// loopback listener.
	chain, _ := chaingen.Generate(chaingen.Config{Seed: 1, Ads: 4, MhsPerAd: 100, RemoveEvery: 4})
	pub, _ := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
	_ = pub.SetHead(context.Background(), chain.Head())
	srv := httptest.NewServer(pub)
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	addrs := []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/" + host + "/tcp/" + port + "/http")}

	done := make(chan struct{})
	hooks := ingest.Hooks{WalkDone: func(peer.ID, cid.Cid, int, time.Duration) { close(done) }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()

	// README: ingest
	st := memory.New()
	defer st.Close()
	ds := dssync.MutexWrap(datastore.NewMapDatastore()) // go-ds-pebble on disk in a node
	// The publisher is on 127.0.0.1: only a private pool's policy dials it.
	pool, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		log.Fatal(err)
	}
	newSyncer := func(publisher peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
		return ipnisync.New(peer.AddrInfo{ID: publisher, Addrs: addrs}, ipnisync.WithDialPolicy(pool))
	}
	ing, err := ingest.New(st, ds, newSyncer, ingest.WithHooks(hooks))
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan error)
	go func() { ran <- ing.Run(ctx) }()

	// An announce is a hint: the walk starts from the publisher's signed
	// head. Announces come from an announce.Receiver in a node.
	if err := ing.Announce(chain.Publisher, addrs, chain.Head()); err != nil {
		log.Fatal(err)
	}
	<-done // hooks.WalkDone
	s, _ := ing.Status(chain.Publisher)
	fmt.Printf("applied %d ads, indexed %d multihashes, lag %d, up to date: %v\n",
		s.AdsApplied, s.EntriesIndexed, s.Pending, s.LastHead.Equals(chain.Head()))
	// README end

	cancel()
	fmt.Println("Run:", <-ran)
	fmt.Println("store equals the model:", chain.Model().Equal(context.Background(), st) == nil)
	info, _ := st.Provider(context.Background(), chain.Provider)
	fmt.Println("provider's last ad is the head:", info.LastAdvertisement.Equals(chain.Head()))
	// Output:
	// applied 4 ads, indexed 200 multihashes, lag 0, up to date: true
	// Run: <nil>
	// store equals the model: true
	// provider's last ad is the head: true
}
