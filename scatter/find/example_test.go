package find_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// A single indexer's find API: a store, a store backend, the handler.
func ExampleNewHandler() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	s := memory.New()
	defer s.Close()

	// A provider record and one multihash it provides.
	sk, _, _ := crypto.GenerateEd25519Key(zeroReader{})
	id, _ := peer.IDFromPrivateKey(sk)
	addr := multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")
	s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id, Addrs: []multiaddr.Multiaddr{addr}}})
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}}, mh)

	// README: find-handler
	b, err := find.NewStoreBackend(s) // one indexer: the find API over its store
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := find.NewHandler(b) // GET /multihash/{mh}, /cid/{cid}, /providers, ...
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// README end

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

// The whole find API in one process: a store backend over store/memory,
// served by the handler, queried by the HTTP client, which is itself a
// Backend (so a scatter.Gather can fan out over many of them).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, not blocks
	defer cancel()
	s := memory.New()
	defer s.Close()

	sk, _, _ := crypto.GenerateEd25519Key(zeroReader{})
	id, _ := peer.IDFromPrivateKey(sk)
	addr := multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")
	if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id, Addrs: []multiaddr.Multiaddr{addr}}}); err != nil {
		fmt.Println(err)
		return
	}
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	if err := s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}}, mh); err != nil {
		fmt.Println(err)
		return
	}
	// A value of a provider the store has no record of is answered too,
	// with the provider's ID and no addresses.
	other := peer.ID("\x00\x05other") // an identity-multihash peer ID
	if err := s.Put(ctx, store.Value{ProviderID: other, ContextID: []byte("ctx")}, mh); err != nil {
		fmt.Println(err)
		return
	}

	backend, err := find.NewStoreBackend(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := find.NewHandler(backend)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	client, err := find.NewClient(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for r, err := range client.Find(ctx, mh) {
		if err != nil {
			fmt.Println(err)
			return
		}
		lines = append(lines, fmt.Sprintf("known %t ctx=%s addrs=%v", r.Provider.ID == id, r.ContextID, r.Provider.Addrs))
	}
	slices.Sort(lines) // the store's order of values is its own
	for _, l := range lines {
		fmt.Println(l)
	}
	info, err := client.Provider(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.AddrInfo.Addrs)
	_, err = client.Provider(ctx, other)
	fmt.Println(errors.Is(err, find.ErrNotFound))
	// Output:
	// known false ctx=ctx addrs=[]
	// known true ctx=ctx addrs=[/ip4/127.0.0.1/tcp/3104/http]
	// [/ip4/127.0.0.1/tcp/3104/http]
	// true
}

// zeroReader makes the example's key, and so its peer ID, deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
