package indexercmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/internal/testbed/loopbench"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

var nodeFindKeys = flag.Int("node-find-keys", 1_000_000, "multihashes in the index of BenchmarkNodeFind")

// BenchmarkNodeFind measures store hits through a running node's find
// listener, the stack examples/indexer serves: the connection caps of
// cli.Listen at their defaults, httpserve.NewServer's timeouts, the
// listener's and the lookups' muxes, the Prometheus wrapper of the
// metrics hooks, and the find handler over a find.StoreBackend. Beside it,
// in the same run and in alternating turns (internal/testbed/loopbench.Compare), a
// raw net/http handler answers the same paths with the same bytes from a
// map: x-raw-rate and x-raw-p99 are the ratios to it.
//
// The index holds -node-find-keys random sha2-256 multihashes (1M by
// default) of 100 providers, in contexts of 1,000, in Pebble on disk
// (flushed and compacted, as after a while of running) and in memory; the
// lookups are 10,000 of them, each asked for many times. Over Pebble the
// node keeps lookups and answers ready (store/pebble's WithLookupCache,
// scatter/find's WithAnswerCache), so store=pebble measures a working set
// that fits them; store=pebble-uncached opens the index without a lookup
// cache, which keeps no answer either: every lookup parses, reads Pebble
// and encodes. With ingest=on, one goroutine
// puts random multihashes into the same store at full rate while the
// clients find, as the walker does (a new context per Put of
// ingest.DefaultBatchSize multihashes), and ingest-mh/s reports its rate.
//
//	go test -run '^$' -bench BenchmarkNodeFind -benchtime 40000x -benchmem ./examples/internal/cmd/indexercmd/
func BenchmarkNodeFind(b *testing.B) {
	for _, backend := range []string{"pebble", "pebble-uncached", "memory"} {
		b.Run("store="+backend, func(b *testing.B) {
			s := openFindBenchStore(b, backend)
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			provs := findBenchProviders(b, s, 100)
			paths := fillFindBenchStore(b, s, rng, provs, *nodeFindKeys, 10_000)
			settleFindBenchStore(b, s)
			url := startFindBenchNode(b, s)
			rawURL, stop := loopbench.Serve(b, findBenchRaw(b, url, paths))
			defer stop()
			for _, ingesting := range []bool{false, true} {
				for _, c := range []int{1, 16, 64} {
					name := fmt.Sprintf("ingest=off/c=%d", c)
					if ingesting {
						name = fmt.Sprintf("ingest=on/c=%d", c)
					}
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						if ingesting {
							defer findBenchIngest(b, s, provs)()
						}
						defer findBenchWatch(b, s)()
						loopbench.Compare(b, url, rawURL, paths, c)
					})
				}
			}
		})
	}
}

func openFindBenchStore(b *testing.B, backend string) store.Store {
	if backend == "memory" {
		return memory.New()
	}
	var opts []pebble.Option
	if backend == "pebble-uncached" {
		opts = append(opts, pebble.WithLookupCache(0))
	}
	s, err := pebble.Open(filepath.Join(b.TempDir(), "index"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// findBenchProviders puts n provider records, each with two addresses, and
// returns their IDs.
func findBenchProviders(b *testing.B, s store.Store, n int) []peer.ID {
	ids := make([]peer.ID, n)
	for i := range ids {
		seed := sha256.Sum256(fmt.Appendf(nil, "indexernode find bench provider %d", i))
		sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
		if err != nil {
			b.Fatal(err)
		}
		if ids[i], err = peer.IDFromPrivateKey(sk); err != nil {
			b.Fatal(err)
		}
		var addrs []multiaddr.Multiaddr
		for _, a := range []string{fmt.Sprintf("/ip4/10.0.%d.%d/tcp/3000/http", i/250, i%250+1), fmt.Sprintf("/dns4/provider-%d.example.com/tcp/443/tls/http", i)} {
			m, err := multiaddr.NewMultiaddr(a)
			if err != nil {
				b.Fatal(err)
			}
			addrs = append(addrs, m)
		}
		if err := s.PutProvider(context.Background(), store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: ids[i], Addrs: addrs}}); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// randomMH returns a sha2-256 multihash of a random digest.
func randomMH(rng *rand.Rand) multihash.Multihash {
	var d [32]byte
	for i := 0; i < 32; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			d[i+j] = byte(v >> (8 * j))
		}
	}
	mh, _ := multihash.Encode(d[:], multihash.SHA2_256)
	return mh
}

// fillFindBenchStore puts keys random multihashes into s, in contexts of
// 1,000 round robin over provs, and returns the find paths of nPaths of
// them, spread over the whole index.
func fillFindBenchStore(b *testing.B, s store.Store, rng *rand.Rand, provs []peer.ID, keys, nPaths int) []string {
	const perContext = 1000
	ctx := context.Background()
	paths := make([]string, 0, nPaths)
	every := max(1, keys/nPaths)
	batch := make([]multihash.Multihash, 0, perContext)
	for i := 0; i < keys; {
		batch = batch[:0]
		for ; len(batch) < perContext && i < keys; i++ {
			mh := randomMH(rng)
			batch = append(batch, mh)
			if i%every == 0 && len(paths) < nPaths {
				paths = append(paths, "/multihash/"+mh.B58String())
			}
		}
		ctxID := i / perContext
		v := store.Value{ProviderID: provs[ctxID%len(provs)], ContextID: fmt.Appendf(nil, "bench-context-%08d", ctxID), Metadata: []byte("\x80\x12\xa0\x12\x00")}
		if err := s.Put(ctx, v, batch...); err != nil {
			b.Fatal(err)
		}
	}
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths
}

// settleFindBenchStore flushes a Pebble store's memtables and compacts
// it, as the index of a node that has run for a while is: lookups then
// read SSTables, not a memtable holding the whole index.
func settleFindBenchStore(b *testing.B, s store.Store) {
	ps, ok := s.(*pebble.Store)
	if !ok {
		return
	}
	db := ps.Pebble()
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
}

// startFindBenchNode runs a node over s, its find listener bound as
// Main binds it and its hooks those of Main's metrics, and returns its
// find URL. The node stops when b ends.
func startFindBenchNode(b *testing.B, s store.Store) string {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := cli.Listen("127.0.0.1:0", cli.DefaultMaxConns, cli.DefaultMaxConnsPerIP)
	if err != nil {
		b.Fatal(err)
	}
	cfg := indexernode.DefaultConfig()
	cfg.Dir, cfg.Store, cfg.Index, cfg.P2P, cfg.Poll = filepath.Join(b.TempDir(), "node"), "", s, "", 0
	cfg.FreezeAt = -1
	cfg.Hooks = newMetrics().hooks()
	n, err := indexernode.New(ctx, cfg, indexernode.Listeners{Find: ln})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	b.Cleanup(func() {
		if st := ln.(*netlimit.Listener).Stats(); st.Rejected > 0 {
			b.Logf("find listener: %+v", st)
		}
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		if err := n.Close(); err != nil {
			b.Error(err)
		}
	})
	return n.Addrs().FindURL()
}

// findBenchRaw returns the raw baseline: a handler that answers each path
// with the bytes and Content-Type the node answered it with.
func findBenchRaw(b *testing.B, url string, paths []string) http.Handler {
	type answer struct {
		body []byte
		ct   string
	}
	answers := make(map[string]answer, len(paths))
	// A client of its own, closed after: an idle connection left open
	// would count against the node's 64 connections per source.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for _, p := range paths {
		resp, err := cl.Get(url + p)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		answers[p] = answer{body, resp.Header.Get("Content-Type")}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", a.ct)
		w.Header().Set("Content-Length", fmt.Sprint(len(a.body)))
		w.Write(a.body)
	})
}

// findBenchWatch starts watching what makes the tail of a measure and
// returns the function that stops and reports it: gc-cycles, the garbage
// collector's CPU time (gc-cpu-ms) and the part of it taken from
// allocating goroutines as assists (gc-assist-ms, which lookups pay in
// latency), and for Pebble the highest read amplification seen, sampled
// every 20 ms (max-read-amp: the sublevels of L0 plus the other non-empty
// levels a lookup may have to search).
func findBenchWatch(b *testing.B, s store.Store) (stop func()) {
	samples := []rtmetrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}}
	read := func() [3]float64 {
		rtmetrics.Read(samples)
		return [3]float64{float64(samples[0].Value.Uint64()), samples[1].Value.Float64(), samples[2].Value.Float64()}
	}
	before := read()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var maxAmp int
	if ps, ok := s.(*pebble.Store); ok {
		wg.Go(func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				maxAmp = max(maxAmp, ps.Pebble().Metrics().ReadAmp())
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
		after := read()
		b.ReportMetric(after[0]-before[0], "gc-cycles")
		b.ReportMetric((after[1]-before[1])*1000, "gc-cpu-ms")
		b.ReportMetric((after[2]-before[2])*1000, "gc-assist-ms")
		if _, ok := s.(*pebble.Store); ok {
			b.ReportMetric(float64(maxAmp), "max-read-amp")
		}
	}
}

// findBenchIngest starts putting random multihashes into s at full rate,
// ingest.DefaultBatchSize per Put under a new context each, and returns
// the function that stops it and reports ingest-mh/s.
func findBenchIngest(b *testing.B, s store.Store, provs []peer.ID) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var puts atomic.Int64
	var wg sync.WaitGroup
	var failed error
	start := time.Now()
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), 3))
		batch := make([]multihash.Multihash, ingest.DefaultBatchSize)
		for n := 0; ctx.Err() == nil; n++ {
			for i := range batch {
				batch[i] = randomMH(rng)
			}
			v := store.Value{ProviderID: provs[n%len(provs)], ContextID: fmt.Appendf(nil, "ingest-%d-%d", start.UnixNano(), n), Metadata: []byte("\x80\x12\xa0\x12\x00")}
			if err := s.Put(ctx, v, batch...); err != nil {
				if !errors.Is(err, context.Canceled) {
					failed = err
				}
				return
			}
			puts.Add(1)
		}
	})
	return func() {
		cancel()
		wg.Wait()
		if failed != nil {
			b.Fatal(failed)
		}
		b.ReportMetric(float64(puts.Load()*ingest.DefaultBatchSize)/time.Since(start).Seconds(), "ingest-mh/s")
	}
}
