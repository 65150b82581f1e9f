package routing_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/testbed/loopbench"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// BenchmarkRoutingV1 measures store hits through Delegated Routing V1 (GET
// /routing/v1/providers/{cid}, JSON, the CIDv1 raw form of each multihash)
// beside the find API's answer to the same lookups (GET
// /multihash/{b58}, JSON, as in scatter/find's BenchmarkFind), in the same
// run, over the same store backend and loopback HTTP, with 1 and 16 client
// goroutines on keep-alive connections. Rows pair as
// BenchmarkRoutingV1/c=N/routing and BenchmarkRoutingV1/c=N/find.
//
//	go test -run '^$' -bench BenchmarkRoutingV1 -benchtime 20000x -benchmem ./scatter/routing/
func BenchmarkRoutingV1(b *testing.B) {
	const keys, providers = 10000, 100
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	for p := range providers {
		ai := store.ProviderInfo{}
		ai.AddrInfo.ID = testPeer(b, p)
		ai.AddrInfo.Addrs = maddrs(b, fmt.Sprintf("/ip4/10.0.0.%d/tcp/%d/http", p%250+1, 3000+p), fmt.Sprintf("/dns4/provider-%d.example.com/tcp/443/tls/http", p))
		if err := s.PutProvider(ctx, ai); err != nil {
			b.Fatal(err)
		}
	}
	findPaths, routingPaths := make([]string, keys), make([]string, keys)
	for i := range keys {
		mh, err := multihash.Sum(fmt.Appendf(nil, "indexkit routing bench %d", i), multihash.SHA2_256, -1)
		if err != nil {
			b.Fatal(err)
		}
		v := store.Value{ProviderID: testPeer(b, i%providers), ContextID: fmt.Appendf(nil, "ctx-%04d", i/100), Metadata: []byte("\x80\x12\xa0\x12\x00")} // bitswap, ipfs-gateway-http
		if err := s.Put(ctx, v, mh); err != nil {
			b.Fatal(err)
		}
		findPaths[i] = "/multihash/" + mh.B58String()
		routingPaths[i] = routing.Prefix + "providers/" + cid.NewCidV1(cid.Raw, mh).String()
	}
	backend, err := find.NewStoreBackend(s)
	if err != nil {
		b.Fatal(err)
	}
	fh, err := find.NewHandler(backend)
	if err != nil {
		b.Fatal(err)
	}
	rh := newHandler(b, backend)
	for _, c := range []int{1, 16} {
		for _, impl := range []struct {
			name  string
			h     http.Handler
			paths []string
		}{{"routing", rh, routingPaths}, {"find", fh, findPaths}} {
			b.Run(fmt.Sprintf("c=%d/%s", c, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				loopbench.Run(b, impl.h, impl.paths, c)
			})
		}
	}
}
