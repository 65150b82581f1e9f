package loopbench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Run sends b.N GETs of paths (round robin) to h, served on 127.0.0.1,
// from c goroutines over keep-alive connections (one warmed up per
// goroutine), and reports lookups/s and the p50 and p99 latencies in
// microseconds. A request that does not answer 200 fails b.
func Run(b *testing.B, h http.Handler, paths []string, c int) {
	url, stop := Serve(b, h)
	defer stop()
	cl := newClient(url, c)
	defer cl.close()
	cl.warm(b, paths)
	b.ResetTimer()
	lat, err := cl.send(b.N, paths, 0)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if n := cl.retries.Load(); n > 0 {
		b.ReportMetric(float64(n), "retries")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	b.ReportMetric(percentile(lat, 0.50), "p50-us")
	b.ReportMetric(percentile(lat, 0.99), "p99-us")
}

// Serve serves h on a fresh 127.0.0.1 port with a plain [http.Server] (no
// timeouts, no connection caps: the raw baseline) and returns its base URL
// ("http://127.0.0.1:port") and the function that stops it.
func Serve(tb testing.TB, h http.Handler) (url string, stop func()) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv.URL, srv.Close
}

// rounds is how many alternating turns Compare splits each side's
// requests into.
const rounds = 20

// Compare measures two servers already listening, in the same run: url
// (the side under test: the server as deployed, with its middleware) and
// rawURL (the baseline: a raw net/http handler answering the same paths
// with the same bytes). Each gets b.N GETs of paths (round robin) from c
// goroutines over keep-alive connections, one warmed up per goroutine and
// server. The requests go in turns of b.N/20 per side, the order of the
// two sides swapped every other turn (ABBA), so that a change in the
// machine's load (a compaction, a neighbour's build) falls on both sides
// alike.
//
// It reports, for url: lookups/s and the p50 and p99 latencies in
// microseconds; for rawURL: raw-lookups/s, raw-p50-us and raw-p99-us; and
// the ratios the targets are stated in: x-raw-rate (lookups/s over
// raw-lookups/s, 1 = as fast as raw) and x-raw-p99 (p99 over raw's p99,
// 1 = the same tail); retries, when a request had to be sent again after
// a failure (a keep-alive connection found closed; a second failure fails
// b). As the machine's load moves both figures, it also
// reports the CPU time of the whole process (clients, server and anything
// else it runs) per lookup during each side's turns: cpu-us/lookup,
// raw-cpu-us/lookup, and x-raw-cpu (raw's over the side's, 1 = as cheap
// as raw), which is what the rate ratio tends to where the machine is the
// limit and no other process competes. b's own time is that of both sides. A request that
// does not answer 200 fails b.
func Compare(b *testing.B, url, rawURL string, paths []string, c int) {
	sides := []*client{newClient(url, c), newClient(rawURL, c)}
	for _, cl := range sides {
		defer cl.close()
		cl.warm(b, paths)
	}
	var (
		lat     [2][]time.Duration
		elapsed [2]time.Duration
		cpu     [2]time.Duration
	)
	b.ResetTimer()
	done := 0
	for r := range rounds {
		n := (b.N - done) / (rounds - r)
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, s := range order {
			start, cpu0 := time.Now(), processCPU()
			l, err := sides[s].send(n, paths, done)
			elapsed[s] += time.Since(start)
			cpu[s] += processCPU() - cpu0
			if err != nil {
				b.Fatal(err)
			}
			lat[s] = append(lat[s], l...)
		}
		done += n
	}
	b.StopTimer()
	rate := func(s int) float64 { return float64(b.N) / elapsed[s].Seconds() }
	p50, p99 := percentile(lat[0], 0.50), percentile(lat[0], 0.99)
	rawP50, rawP99 := percentile(lat[1], 0.50), percentile(lat[1], 0.99)
	b.ReportMetric(rate(0), "lookups/s")
	b.ReportMetric(p50, "p50-us")
	b.ReportMetric(p99, "p99-us")
	b.ReportMetric(rate(1), "raw-lookups/s")
	b.ReportMetric(rawP50, "raw-p50-us")
	b.ReportMetric(rawP99, "raw-p99-us")
	b.ReportMetric(rate(0)/rate(1), "x-raw-rate")
	if n := sides[0].retries.Load() + sides[1].retries.Load(); n > 0 {
		b.ReportMetric(float64(n), "retries")
	}
	if cpu[0] > 0 && cpu[1] > 0 {
		b.ReportMetric(float64(cpu[0].Microseconds())/float64(b.N), "cpu-us/lookup")
		b.ReportMetric(float64(cpu[1].Microseconds())/float64(b.N), "raw-cpu-us/lookup")
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "x-raw-cpu")
	}
	if rawP99 > 0 {
		b.ReportMetric(p99/rawP99, "x-raw-p99")
	}
}

// processCPU returns the CPU time of the process so far (user and
// system), or 0 where getrusage is missing.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// client sends GETs to one server from c goroutines over keep-alive
// connections.
type client struct {
	retries atomic.Int64 // requests sent again after a failure
	base    string
	c       int
	tr      *http.Transport
	hc      *http.Client
}

func newClient(base string, c int) *client {
	// MaxConnsPerHost: c goroutines keep c connections, no more (a
	// server that caps connections per source, as the node does at 64,
	// would close the extra ones).
	tr := &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, MaxConnsPerHost: c, IdleConnTimeout: time.Minute}
	return &client{base: base, c: c, tr: tr, hc: &http.Client{Transport: tr}}
}

// closeWait is how long close leaves the server to see the connections
// close, so that a server capping connections per source counts them out
// before the next measure dials its own. (A connection it refuses while
// the transport has it parked idle would fail a request later.)
const closeWait = 200 * time.Millisecond

func (cl *client) close() {
	cl.tr.CloseIdleConnections()
	time.Sleep(closeWait)
}

func (cl *client) get(p string) error {
	resp, err := cl.hc.Get(cl.base + p)
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

// warm opens one connection per goroutine: c requests at once, none of
// which gives its connection back before all have their answer, so that
// the transport holds c connections, each of which has served a request.
// A server that caps connections per source may not have seen the
// connections of the last measure close yet and close new ones at once: a
// failed warm-up is tried again from no connection, for up to a few
// seconds.
func (cl *client) warm(tb testing.TB, paths []string) {
	tb.Helper()
	errs := make([]error, cl.c)
	for try := 0; ; try++ {
		var wg, answered sync.WaitGroup
		answered.Add(cl.c)
		for i := range cl.c {
			wg.Go(func() {
				resp, err := cl.hc.Get(cl.base + paths[i%len(paths)])
				answered.Done()
				if err != nil {
					errs[i] = err
					return
				}
				answered.Wait()
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("%s: status %d", paths[i%len(paths)], resp.StatusCode)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			return
		}
		if try == 20 {
			tb.Fatal(err)
		}
		cl.tr.CloseIdleConnections()
		time.Sleep(closeWait)
	}
}

// send sends n GETs, of paths[(from+i)%len(paths)], from cl.c goroutines,
// and returns the latencies.
func (cl *client) send(n int, paths []string, from int) ([]time.Duration, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, cl.c)
	var wg sync.WaitGroup
	var failed atomic.Value
	for g := range cl.c {
		wg.Go(func() {
			mine := make([]time.Duration, 0, n/cl.c+1)
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					break
				}
				start := time.Now()
				p := paths[(from+int(i))%len(paths)]
				if err := cl.get(p); err != nil {
					// Under heavy load a keep-alive connection is now
					// and then found closed (EOF): once per lookup, the
					// request is sent again, counted in retries, its
					// time in the latency.
					cl.retries.Add(1)
					if err := cl.get(p); err != nil {
						failed.Store(err)
						break
					}
				}
				mine = append(mine, time.Since(start))
			}
			lat[g] = mine
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return nil, err
	}
	return slices.Concat(lat...), nil
}

// percentile returns the p-quantile of lat in microseconds (0 for none);
// it sorts lat.
func percentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
}
