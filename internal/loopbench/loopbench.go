package loopbench

import (
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
)

// Run sends b.N GETs of paths (round robin) to h, served on 127.0.0.1,
// from c goroutines over keep-alive connections (one warmed up per
// goroutine), and reports lookups/s and the p50 and p99 latencies in
// microseconds. A request that does not answer 200 fails b.
func Run(b *testing.B, h http.Handler, paths []string, c int) {
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
