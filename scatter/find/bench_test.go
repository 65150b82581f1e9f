package find_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/loopbench"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// BenchmarkFind measures store hits through the find API over loopback
// HTTP (GET /multihash/{b58}, JSON), with 1 and 16 client goroutines on
// keep-alive connections, beside a raw net/http handler that answers the
// same paths with the same bytes from a map, in the same run. Rows pair as
// BenchmarkFind/c=N/store and BenchmarkFind/c=N/raw for examples/benchtable.
//
//	go test -run '^$' -bench BenchmarkFind -benchtime 20000x ./scatter/find/ | go run ./examples/benchtable
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
	for _, c := range []int{1, 16} {
		for _, impl := range []struct {
			name string
			h    http.Handler
		}{{"store", h}, {"raw", raw}} {
			b.Run(fmt.Sprintf("c=%d/%s", c, impl.name), func(b *testing.B) {
				loopbench.Run(b, impl.h, paths, c)
			})
		}
	}
}
