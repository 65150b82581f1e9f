package handoff_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store/memory"
)

// printIngest stands for the node's ingester (handoff.FromIngester in a
// node) and prints what the handoff asks of it. Its CheckAd vouches for
// any ad as one of provider; a node's fetches it from the publisher and
// checks it.
type printIngest struct{ provider peer.ID }

func (p printIngest) CheckAd(_ context.Context, _ peer.ID, addrs []multiaddr.Multiaddr, ad cid.Cid) (*schema.Advertisement, error) {
	fmt.Println("check", ad, "with the publisher at", addrs)
	return &schema.Advertisement{Provider: p.provider.String()}, nil
}

func (printIngest) Reset(_ context.Context, _ peer.ID, lastHead cid.Cid) error {
	fmt.Println("walk resumes after", lastHead)
	return nil
}

func (printIngest) Announce(_ peer.ID, addrs []multiaddr.Multiaddr, head cid.Cid) error {
	fmt.Println("announce to", addrs, "head defined:", head.Defined())
	return nil
}

// A publisher moves from a frozen indexer to an active one: the active
// indexer's Receiver (which its admin API calls for POST
// /ingest/handoff/{publisher}, see ingest/admin) reads the frozen
// indexer's /providers, checks FrozenAt with the publisher, registers the
// providers and resumes ingestion right after FrozenAt.
func Example() {
	id := func(seed byte) peer.ID {
		priv, _ := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(make32(seed)))
		p, _ := peer.IDFromPrivateKey(priv)
		return p
	}
	publisher, provider, frozenID := id(1), id(2), id(3)

	frozen := frozenIndexer(provider, publisher) // its find API
	defer frozen.Close()

	// The active indexer: store, registry in its datastore (go-ds-leveldb
	// on disk), receiver taking handoffs only from the frozen indexers of
	// its pool.
	st := memory.New()
	defer st.Close()
	ing := printIngest{provider} // handoff.FromIngester(ing) in a node
	ds := dssync.MutexWrap(datastore.NewMapDatastore())
	// README: handoff-receiver
	reg, err := handoff.NewRegistry(ds) // the node's assignments
	if err != nil {
		log.Fatal(err)
	}
	// The frozen indexer of this example listens on 127.0.0.1: only a
	// private pool's dial policy lets the receiver reach it.
	pool, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		log.Fatal(err)
	}
	recv, err := handoff.NewReceiver(st, ing, reg, handoff.WithDialPolicy(pool), handoff.WithFrozenIndexers(frozen.URL))
	if err != nil {
		log.Fatal(err)
	}
	// README end

	// What the admin API does with POST /ingest/handoff/{publisher}: the
	// body decoded by handoff.DecodeRequest, then the handoff.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	req := handoff.Request{FrozenID: frozenID, FrozenURL: frozen.URL}
	if err := recv.Handoff(ctx, publisher, req); err != nil {
		fmt.Println(err)
		return
	}
	info, _ := st.Provider(ctx, provider)
	fmt.Println("provider registered, published by the publisher:", info.Publisher.ID == publisher)
	as, _ := recv.Assignments(ctx)
	fmt.Println("assignments:", len(as), "continued from the frozen indexer:", as[0].Continued == frozenID)

	err = recv.Handoff(ctx, publisher, req)
	fmt.Println("again:", errors.Is(err, handoff.ErrAlreadyAssigned))
	err = recv.Handoff(ctx, id(4), req)
	fmt.Println("unknown publisher:", errors.Is(err, handoff.ErrUnknownPublisher))
	// Output:
	// check baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a with the publisher at [/ip4/10.0.0.3/tcp/3002/http]
	// walk resumes after baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a
	// announce to [/ip4/10.0.0.3/tcp/3002/http] head defined: false
	// provider registered, published by the publisher: true
	// assignments: 1 continued from the frozen indexer: true
	// again: true
	// unknown publisher: true
}

// The admin API of an active indexer, as the assigner calls it: a Node
// over the indexer's parts answers POST /ingest/handoff/{publisher} with
// its Receiver.
func Example_adminAPI() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	id := func(seed byte) peer.ID {
		priv, _ := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(make32(seed)))
		p, _ := peer.IDFromPrivateKey(priv)
		return p
	}
	publisher, provider, frozenID, self := id(1), id(2), id(3), id(5)
	frozen := frozenIndexer(provider, publisher)
	defer frozen.Close()

	st := memory.New()
	defer st.Close()
	ds := dssync.MutexWrap(datastore.NewMapDatastore())
	reg, _ := handoff.NewRegistry(ds)
	pool, _ := netpolicy.New(netpolicy.AllowPrivate())
	recv, _ := handoff.NewReceiver(st, printIngest{provider}, reg, handoff.WithDialPolicy(pool), handoff.WithFrozenIndexers(frozen.URL))
	// The node's ingester; this one is never asked to walk.
	ing, err := ingest.New(st, ds, func(peer.ID, []multiaddr.Multiaddr) (ingest.Syncer, error) {
		return nil, errors.New("no publisher in this example")
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// README: handoff-admin
	// The active indexer: its parts behind the admin API.
	node, err := handoff.NewNode(handoff.NodeConfig{
		ID: self, Store: st, Ingester: ing, Receiver: recv, UseAssigner: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := admin.NewHandler(node, admin.WithToken("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// The assigner: a client of each indexer's admin API.
	client, err := admin.NewClient(srv.URL, admin.WithClientToken("s3cret"))
	if err != nil {
		log.Fatal(err)
	}
	err = client.Handoff(ctx, publisher, admin.HandoffRequest{FrozenID: frozenID, FrozenURL: frozen.URL})
	if err != nil {
		log.Fatal(err)
	}
	// README end

	as, _ := client.Assigned(ctx)
	fmt.Println("assigned:", len(as), "continued from the frozen indexer:", as[0].Continued == frozenID)
	// Output:
	// check baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a with the publisher at [/ip4/10.0.0.3/tcp/3002/http]
	// walk resumes after baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a
	// announce to [/ip4/10.0.0.3/tcp/3002/http] head defined: false
	// assigned: 1 continued from the frozen indexer: true
}

// frozenIndexer serves a frozen indexer's find API, in the reference's
// JSON: one provider of publisher, frozen at its last ad.
func frozenIndexer(provider, publisher peer.ID) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"AddrInfo":{"ID":%q,"Addrs":["/ip4/10.0.0.2/tcp/3001/http"]},
		  "LastAdvertisement":{"/":"baguqeeraoxzsahvvf4vwtic4sqohzbf4zne6nne5rrivwmcsfwekyd6ejs2a"},
		  "Publisher":{"ID":%q,"Addrs":["/ip4/10.0.0.3/tcp/3002/http"]},
		  "FrozenAt":{"/":"baguqeeraetk4qkajkg7t7nhqvzxp6lljc6ea3bcws2ml6c2yduacsd7nb27a"},
		  "FrozenAtTime":"2024-05-06T06:08:09Z"}]`, provider, publisher)
	}))
}

func make32(b byte) []byte {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = b
	}
	return s
}
