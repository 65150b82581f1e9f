package ingest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/chaingen"
	"github.com/indexkit/indexkit/store/memory"
)

// An indexer's ingest loop: announces come in, Run walks each publisher's
// chain and puts its advertisements into the store.
func Example() {
	// A publisher's chain of 4 signed ads, 100 multihashes each; the last
	// one removes an earlier context. In a node, the Syncer is an
	// ingest/ipnisync client made from the announced addresses.
	chain, _ := chaingen.Generate(chaingen.Config{Seed: 1, Ads: 4, MhsPerAd: 100, RemoveEvery: 4})
	newSyncer := func(publisher peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
		return chain.Source(), nil
	}

	st := memory.New()
	defer st.Close()
	ds := dssync.MutexWrap(datastore.NewMapDatastore()) // go-ds-leveldb on disk in a node
	done := make(chan struct{})
	ing, err := ingest.New(st, ds, newSyncer, ingest.WithHooks(ingest.Hooks{
		WalkDone: func(peer.ID, cid.Cid, int, time.Duration) { close(done) },
	}))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- ing.Run(ctx) }()
	addrs := []multiaddr.Multiaddr{multiaddr.StringCast("/dns4/publisher.example/tcp/443/https")}
	_ = ing.Announce(chain.Publisher, addrs, chain.Head())
	<-done
	cancel()
	fmt.Println("Run:", <-ran)

	s, _ := ing.Status(chain.Publisher)
	fmt.Printf("applied %d ads, indexed %d multihashes, lag %d, up to date: %v\n",
		s.AdsApplied, s.EntriesIndexed, s.Pending, s.LastHead.Equals(chain.Head()))
	fmt.Println("store equals the model:", chain.Model().Equal(context.Background(), st) == nil)
	info, _ := st.Provider(context.Background(), chain.Provider)
	fmt.Println("provider's last ad is the head:", info.LastAdvertisement.Equals(chain.Head()))
	// Output:
	// Run: <nil>
	// applied 4 ads, indexed 200 multihashes, lag 0, up to date: true
	// store equals the model: true
	// provider's last ad is the head: true
}
