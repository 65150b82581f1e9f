package routing_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Delegated Routing V1 beside the find API of one indexer: both answer
// from the same store backend.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	s := memory.New()
	defer s.Close()
	sk, _, _ := crypto.GenerateEd25519Key(zeroReader{})
	id, _ := peer.IDFromPrivateKey(sk)
	s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id,
		Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")}}})
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}}, mh) // bitswap

	// README: routing-handler
	b, err := find.NewStoreBackend(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	findAPI, err := find.NewHandler(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	routingAPI, err := routing.New(b) // GET /routing/v1/providers/{cid}, /routing/v1/peers/{id}
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/", findAPI)
	mux.Handle(routing.Prefix, routingAPI)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// README end

	resp, err := http.Get(srv.URL + "/routing/v1/providers/" + cid.NewCidV1(cid.Raw, mh).String())
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Cache-Control"))
	fmt.Println(string(body))
	// Output:
	// 200 OK public, max-age=300, stale-while-revalidate=60, stale-if-error=120
	// {"Providers":[{"Schema":"peer","ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Addrs":["/ip4/127.0.0.1/tcp/3104/http"],"Protocols":["transport-bitswap"]}]}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
