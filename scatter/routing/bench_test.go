package routing_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

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
				benchLoopback(b, impl.h, impl.paths, c)
			})
		}
	}
}

func benchLoopback(b *testing.B, h http.Handler, paths []string, c int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func(p string) error {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: status %d", p, resp.StatusCode)
		}
		return err
	}
	for i := range c { // warm up one connection per goroutine
		if err := get(paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, c)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	for g := range c {
		wg.Go(func() {
			mine := make([]time.Duration, 0, b.N/c+1)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					break
				}
				start := time.Now()
				if err := get(paths[int(i)%len(paths)]); err != nil {
					failed.Store(err)
					break
				}
				mine = append(mine, time.Since(start))
			}
			lat[g] = mine
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(float64(len(all))*p))].Microseconds())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}
