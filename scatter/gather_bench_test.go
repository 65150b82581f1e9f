package scatter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
)

// BenchmarkGather measures what a Gather adds over its slowest backend.
// Each query's overhead is its total time minus the elapsed time of the
// slowest backend asked, as that backend measured itself (from its Find
// being called to its iterator returning); p50 and p99 are over every query
// of the run. queries/s is the rate with the given number of queries in
// flight.
//
// Rows pair for examples/benchtable: .../store is a Gather over the given
// number of backends, .../raw a direct query of one of the same backends in
// the same run (its "overhead" is the measurement's own).
//
// transport=sim backends simulate a loopback IPNI backend cheaply, without
// sockets: each query waits simRoundTrip (the round trip, which costs the
// client no CPU) and then decodes a JSON FindResponse of two results (one
// its own, one shared by every backend), the parsing an HTTP backend does. transport=http
// backends are find.Clients talking to store-backed find handlers on
// 127.0.0.1, client and servers sharing the machine.
func BenchmarkGather(b *testing.B) {
	mh, _ := multihash.Sum([]byte("bench"), multihash.SHA2_256, -1)
	for _, transport := range []string{"sim", "http"} {
		for _, n := range []int{1, 4, 16} {
			var backends []find.Backend
			switch transport {
			case "sim":
				for i := range n {
					backends = append(backends, newSimBackend(b, i, mh))
				}
			case "http":
				backends = newGatherPool(b, n, mh).backends(b)
			}
			timed := make([]find.Backend, n)
			for i, be := range backends {
				timed[i] = timedBackend{be, i}
			}
			g, err := scatter.NewGather(timed)
			if err != nil {
				b.Fatal(err)
			}
			for _, inflight := range []int{1, 4} {
				name := fmt.Sprintf("backends=%d/inflight=%d/transport=%s", n, inflight, transport)
				b.Run(name+"/store", func(b *testing.B) { runGatherBench(b, g, n, inflight, mh) })
				b.Run(name+"/raw", func(b *testing.B) { runGatherBench(b, timed[0], 1, inflight, mh) })
			}
		}
	}
}

func runGatherBench(b *testing.B, be find.Backend, n, inflight int, mh multihash.Multihash) {
	// Warm up connections and caches.
	for range 10 * inflight {
		for range be.Find(b.Context(), mh) {
		}
	}
	var next atomic.Int64
	overheads := make([][]time.Duration, inflight)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range inflight {
		wg.Go(func() {
			times := &benchTimes{d: make([]time.Duration, n)}
			ctx := context.WithValue(b.Context(), benchTimesKey{}, times)
			var ov []time.Duration
			for next.Add(1) <= int64(b.N) {
				clear(times.d)
				t0 := time.Now()
				results := 0
				for _, err := range be.Find(ctx, mh) {
					if err != nil {
						b.Error(err)
						return
					}
					results++
				}
				total := time.Since(t0)
				if results == 0 {
					b.Error("no results")
					return
				}
				ov = append(ov, total-slices.Max(times.d))
			}
			overheads[w] = ov
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(overheads...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / float64(time.Microsecond)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "queries/s")
	b.ReportMetric(pct(0.50), "p50-overhead-us")
	b.ReportMetric(pct(0.99), "p99-overhead-us")
}

type benchTimesKey struct{}

// benchTimes holds each backend's elapsed time for the query in progress;
// each backend writes its own slot.
type benchTimes struct{ d []time.Duration }

// timedBackend records how long its backend took for each Find in the
// query's benchTimes.
type timedBackend struct {
	find.Backend
	slot int
}

func (t timedBackend) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		start := time.Now()
		defer func() {
			if bt, ok := ctx.Value(benchTimesKey{}).(*benchTimes); ok {
				bt.d[t.slot] = time.Since(start)
			}
		}()
		for r, err := range t.Backend.Find(ctx, mh) {
			if !yield(r, err) {
				return
			}
		}
	}
}

// simRoundTrip is the simulated backend's wait for its answer, about a
// loopback HTTP round trip (78 µs p50 on the reference machine).
const simRoundTrip = 80 * time.Microsecond

// simBackend answers every query, after simRoundTrip, by decoding the same
// JSON FindResponse.
type simBackend struct{ body []byte }

func newSimBackend(tb testing.TB, i int, mh multihash.Multihash) *simBackend {
	own, shared := gatherPeer(tb, i), gatherPeer(tb, 1000)
	body, err := json.Marshal(find.FindResponse{MultihashResults: []find.MultihashResult{{
		Multihash: mh,
		ProviderResults: []find.ProviderResult{
			{ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12, 0}, Provider: &own},
			{ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12, 0}, Provider: &shared},
		},
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	return &simBackend{body: body}
}

func (s *simBackend) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		select {
		case <-time.After(simRoundTrip):
		case <-ctx.Done():
			yield(find.ProviderResult{}, ctx.Err())
			return
		}
		var fr find.FindResponse
		if err := json.Unmarshal(s.body, &fr); err != nil {
			yield(find.ProviderResult{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(find.ProviderResult{}, err)
			return
		}
		for _, r := range fr.MultihashResults[0].ProviderResults {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (s *simBackend) Providers(context.Context) ([]find.ProviderInfo, error) { return nil, nil }

func (s *simBackend) Provider(_ context.Context, id peer.ID) (find.ProviderInfo, error) {
	return find.ProviderInfo{}, find.ErrNotFound
}
