package scatternode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// A front end over two find APIs (here each an httptest server over its
// own store) answers a lookup with the results of both, merged.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// One provider; each backend indexes the multihash under its own context.
	sk, _, _ := crypto.GenerateEd25519Key(zeroReader{})
	id, _ := peer.IDFromPrivateKey(sk)
	mh, _ := multihash.Sum([]byte("hello"), multihash.SHA2_256, -1)
	var backends []string
	for _, ctxID := range []string{"ctx-a", "ctx-b"} {
		s := memory.New()
		defer s.Close()
		s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: id,
			Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")}}})
		s.Put(ctx, store.Value{ProviderID: id, ContextID: []byte(ctxID), Metadata: []byte{0x80, 0x12}}, mh)
		backend, err := find.NewStoreBackend(s)
		if err != nil {
			panic(err)
		}
		h, err := find.NewHandler(backend)
		if err != nil {
			panic(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		backends = append(backends, srv.URL)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	cfg := scatternode.DefaultConfig()
	cfg.Backends = backends
	front, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		panic(err)
	}
	defer front.Close()
	done := make(chan error, 1)
	go func() { done <- front.Run(ctx) }()

	resp, err := http.Get(front.Addrs().FindURL() + "/multihash/" + mh.B58String())
	if err != nil {
		panic(err)
	}
	var fr find.FindResponse
	err = json.NewDecoder(resp.Body).Decode(&fr)
	resp.Body.Close()
	if err != nil {
		panic(err)
	}
	var contexts []string
	for _, r := range fr.MultihashResults[0].ProviderResults {
		contexts = append(contexts, string(r.ContextID))
	}
	slices.Sort(contexts) // backends answer in any order
	fmt.Println(resp.Status, contexts)

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// 200 OK [ctx-a ctx-b]
	// stopped: <nil>
}

// zeroReader makes the example's key, and so its peer ID, deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
