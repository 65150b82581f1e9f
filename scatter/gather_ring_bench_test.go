package scatter_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
)

// BenchmarkGatherRing compares, in one run, a lookup through a Gather with
// a ring (R = 2 owners asked, the first complete answer wins) against full
// fan-out over the same 8 store-backed find handlers on 127.0.0.1 (every
// backend asked, answers merged), with a raw find.Client query of one
// owner as the baseline. Each key is held by its 2 owners on the ring.
// ring-hedge2ms is the ring with WithHedge(2ms): the second owner only
// when the primary fails or has not answered within 2 ms.
//
// Metrics: asked/op is the backend requests the Gather sent per lookup,
// reached/op those that reached a backend's handler (a request cancelled
// once another owner won may never arrive), conns/op the new connections
// the backends accepted per lookup (cancelling an HTTP/1.1 request in
// flight closes its connection), p50-us and p99-us the latency
// of a whole lookup over every lookup of the run, with inflight lookups
// at once.
func BenchmarkGatherRing(b *testing.B) {
	const n, r, keys = 8, 2, 256
	p := newRingPool(b, n, r, keys)
	ring := p.gather(b, false)
	hedged := p.gather(b, false, scatter.WithHedge(2*time.Millisecond))
	fanOut := p.gather(b, true)
	// raw asks, for each key, one of its owners directly.
	raws := make([]find.Backend, n)
	for i, be := range p.backends {
		c, err := find.NewClient(be.srv.URL, find.WithHTTPClient(p.client))
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = c
	}
	for _, inflight := range []int{1, 4} {
		for _, mode := range []string{"ring", "ring-hedge2ms", "fanout", "raw"} {
			b.Run(fmt.Sprintf("backends=%d/R=%d/inflight=%d/%s", n, r, inflight, mode), func(b *testing.B) {
				pick := func(mh multihash.Multihash) find.Backend {
					switch mode {
					case "ring":
						return ring
					case "ring-hedge2ms":
						return hedged
					case "fanout":
						return fanOut
					}
					return raws[p.ring.Owners(mh)[0]]
				}
				runRingBench(b, p, pick, inflight, mode != "raw")
			})
		}
	}
}

func runRingBench(b *testing.B, p *ringPool, pick func(multihash.Multihash) find.Backend, inflight int, gathered bool) {
	lookup := func(mh multihash.Multihash) {
		results := 0
		for _, err := range pick(mh).Find(b.Context(), mh) {
			if err != nil {
				b.Error(err)
				return
			}
			results++
		}
		if results != 2 {
			b.Errorf("%d results for %s, want 2", results, mh.B58String())
		}
	}
	for _, mh := range p.keys[:32] { // warm up connections
		lookup(mh)
	}
	asked := func() uint64 {
		var s uint64
		if g, ok := pick(p.keys[0]).(*scatter.Gather); ok {
			for _, be := range g.Stats().Backends {
				s += be.Requests
			}
		}
		return s
	}
	reached := func() (req, conns int64) {
		for _, be := range p.backends {
			req += be.requests.Load()
			conns += be.conns.Load()
		}
		return req, conns
	}
	asked0 := asked()
	reached0, conns0 := reached()
	var next atomic.Int64
	lat := make([][]time.Duration, inflight)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range inflight {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				mh := p.keys[int(i)%len(p.keys)]
				t0 := time.Now()
				lookup(mh)
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	// Let cancelled requests land before counting what reached the backends.
	time.Sleep(20 * time.Millisecond)
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(q float64) float64 {
		return float64(all[min(len(all)-1, int(q*float64(len(all))))]) / float64(time.Microsecond)
	}
	if gathered {
		b.ReportMetric(float64(asked()-asked0)/float64(b.N), "asked/op")
	} else {
		b.ReportMetric(1, "asked/op")
	}
	req, conns := reached()
	b.ReportMetric(float64(req-reached0)/float64(b.N), "reached/op")
	b.ReportMetric(float64(conns-conns0)/float64(b.N), "conns/op")
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}
