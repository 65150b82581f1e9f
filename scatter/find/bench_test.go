package find_test

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

	"github.com/libp2p/go-libp2p/core/peer"

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
				benchLoopback(b, impl.h, paths, c)
			})
		}
	}
}

// benchLoopback sends b.N GETs of paths (round robin) to h on 127.0.0.1
// from c goroutines and reports lookups/s and latency percentiles.
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
