package find_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/testbed/loopbench"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// BenchmarkFind measures store hits through the find handler alone over
// loopback HTTP (GET /multihash/{b58}, JSON), with 1, 16 and 64 client
// goroutines on keep-alive connections, beside a raw net/http handler that
// answers the same paths with the same bytes from a map, in the same run
// and in alternating turns (internal/testbed/loopbench.Compare): x-raw-rate and
// x-raw-p99 are the ratios to the raw handler. examples/indexernode's
// BenchmarkNodeFind measures the node's whole find listener the same way.
//
//	go test -run '^$' -bench BenchmarkFind -benchtime 20000x -benchmem ./scatter/find/
func BenchmarkFind(b *testing.B) {
	const keys, providers = 10000, 100
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	for p := range providers {
		ai := findAddrInfo(b, p)
		ai.Addrs = append(ai.Addrs, findAddrs(b, fmt.Sprintf("/dns4/provider-%d.example.com/tcp/443/tls/http", p))...)
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: *ai}); err != nil {
			b.Fatal(err)
		}
	}
	pids := make([]peer.ID, providers)
	for p := range pids {
		pids[p] = findPeer(b, p)
	}
	paths := make([]string, keys)
	for i := range keys {
		mh := findMH(b, i)
		v := store.Value{ProviderID: pids[i%providers], ContextID: fmt.Appendf(nil, "ctx-%04d", i/100), Metadata: []byte("\x80\x12\x00bitswap-ish")}
		if err := s.Put(ctx, v, mh); err != nil {
			b.Fatal(err)
		}
		paths[i] = "/multihash/" + mh.B58String()
	}
	h := newHandler(b, newStoreBackend(b, s))
	// The raw baseline answers each path with the bytes the find API gives.
	answers := make(map[string][]byte, keys)
	for _, p := range paths {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 200 {
			b.Fatalf("%s: %d", p, rec.Code)
		}
		answers[p] = rec.Body.Bytes()
	}
	raw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := answers[r.URL.Path]
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body)
	})
	url, stop := loopbench.Serve(b, h)
	defer stop()
	rawURL, stopRaw := loopbench.Serve(b, raw)
	defer stopRaw()
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			loopbench.Compare(b, url, rawURL, paths, c)
		})
	}
}
