package scatter_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// A single indexer's find API: a store, a store backend, the handler.
func ExampleNewHandler() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	// A provider record and one multihash it provides.
	sk, _, _ := crypto.GenerateEd25519Key(zeroReader{})
	id, _ := peer.IDFromPrivateKey(sk)
	addr := multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")
	s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id, Addrs: []multiaddr.Multiaddr{addr}}})
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}}, mh)

	srv := httptest.NewServer(scatter.NewHandler(scatter.NewStoreBackend(s)))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/multihash/" + mh.B58String())
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	fmt.Println(string(body))

	resp, _ = http.Get(srv.URL + "/multihash/" + mh.HexString()[:10] + "00")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, ": ", string(body))
	// Output:
	// 200 OK
	// {"MultihashResults":[{"Multihash":"EiAs8k26X7CjDiboOyrFueKeGxYeXB+nQl5zBDNik4uYJA==","ProviderResults":[{"ContextID":"Y3R4","Metadata":"gBI=","Provider":{"ID":"12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN","Addrs":["/ip4/127.0.0.1/tcp/3104/http"]}}]}]}
	// 400 Bad Request: bad multihash "12202cf24d00": not a valid base58 or hex encoded multihash
}

// zeroReader makes the example's key, and so its peer ID, deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
