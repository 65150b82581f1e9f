package ingest_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus returns a "kB" field of /proc/self/status in bytes, or 0.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return n << 10
		}
	}
	return 0
}

var benchChains = map[string]*chaingen.Chain{}

func benchChain(b *testing.B, cfg chaingen.Config) *chaingen.Chain {
	key := fmt.Sprintf("%+v", cfg)
	if c := benchChains[key]; c != nil {
		return c
	}
	c := generate(b, cfg)
	benchChains[key] = c
	return c
}

// chainEntries decodes every ad of chain with its multihashes, for the raw
// baseline.
func chainEntries(b *testing.B, chain *chaingen.Chain) ([]store.Value, [][]multihash.Multihash) {
	ctx := context.Background()
	var vals []store.Value
	var all [][]multihash.Multihash
	for i := range chain.Len() {
		ad, err := chain.Ad(i)
		if err != nil {
			b.Fatal(err)
		}
		var mhs []multihash.Multihash
		for c := ad.Entries; ad.HasEntries() && c.Defined(); {
			blk, err := chain.Block(ctx, c)
			if err != nil {
				b.Fatal(err)
			}
			ch, err := schema.DecodeEntryChunk(c, blk)
			if err != nil {
				b.Fatal(err)
			}
			mhs = append(mhs, ch.Entries...)
			c = ch.Next
		}
		vals = append(vals, store.Value{ProviderID: chain.Provider, ContextID: ad.ContextID, Metadata: ad.Metadata})
		all = append(all, mhs)
	}
	return vals, all
}

// benchBackends are the stores BenchmarkIngest measures: those the tests
// use, and LevelDB.
var benchBackends = append(backends[:len(backends):len(backends)], struct {
	name string
	open func(t testing.TB) store.Store
}{"leveldb", func(t testing.TB) store.Store {
	s, err := leveldb.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}})

// The chains of BenchmarkIngest: the headline one of the issue (100 ads of
// 10,000 multihashes in chunks of 1,000: 1,000,000 multihashes, 1,100
// blocks) and one of metadata-only ads.
var (
	benchEntries   = chaingen.Config{Seed: 9, Ads: 100, MhsPerAd: 10_000, ChunkSize: 1000}
	benchNoEntries = chaingen.Config{Seed: 10, Ads: 2000}
)

// BenchmarkIngest measures ingesting a generated chain into each store
// backend (memory, pebble, leveldb), as a node runs it: the chain served
// over loopback HTTP by an ingest/ipnisync Publisher (an httptest server on
// 127.0.0.1, in this process), fetched by an ipnisync.Client as the Syncer,
// with the walker state in go-ds-leveldb on disk. Sub-benchmarks, per
// backend:
//
//	<backend>/http/store     the headline: the 1,000,000-multihash chain over HTTP
//	<backend>/http/raw       the same multihashes Put into the same backend
//	                         directly, one Put per ad, then Flush: the floor
//	<backend>/inmem          the chain walked from memory (no HTTP, walker
//	                         state in a map datastore): what ingest itself costs
//	<backend>/noentries/http 2,000 metadata-only ads over HTTP (ads/s)
//	<backend>/noentries/inmem the same from memory
//	pebble/pubs4/<shape>     four publishers in another process, into Pebble
//	                         and into a discarding baseline store (see
//	                         benchIngestShapes)
//
// http/store and http/raw pair up in examples/benchtable (same Op and
// parameters, last element store or raw). Metrics, over the timed section
// (from the first request to the last checkpoint's Flush):
//
//	ads/s      advertisements per second (raw: Puts of one ad's multihashes)
//	cpu-us/ad  process CPU per advertisement (noentries only)
//	mh/s       multihashes per second
//	cpu-s/Mmh  process CPU (user+sys: walker, HTTP client and server,
//	           store and its background work) per million multihashes
//	mh/cpu-s   multihashes per CPU-second, the figure the reference was
//	           measured by (storetheindex: ≈ 55,000)
//	rss-B/mh   resident memory grown per multihash (after FreeOSMemory)
//	peak-rss-B/mh  peak resident memory above the start, per multihash
//
// Both sides of a pair report ads/s first (benchtable takes a side's first
// "/s" metric as its rate), so their ratio is the mh/s ratio as well.
func BenchmarkIngest(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name+"/http/store", func(b *testing.B) {
			chain := benchChain(b, benchEntries)
			benchWalk(b, chain, be.open, true, benchEntries.Ads*benchEntries.MhsPerAd)
		})
		b.Run(be.name+"/http/raw", func(b *testing.B) {
			chain := benchChain(b, benchEntries)
			benchRawPut(b, chain, be.open)
		})
		b.Run(be.name+"/inmem", func(b *testing.B) {
			chain := benchChain(b, benchEntries)
			benchWalk(b, chain, be.open, false, benchEntries.Ads*benchEntries.MhsPerAd)
		})
		b.Run(be.name+"/noentries/http", func(b *testing.B) {
			chain := benchChain(b, benchNoEntries)
			benchWalk(b, chain, be.open, true, 0)
		})
		b.Run(be.name+"/noentries/inmem", func(b *testing.B) {
			chain := benchChain(b, benchNoEntries)
			benchWalk(b, chain, be.open, false, 0)
		})
	}
	benchIngestShapes(b)
}

// meter accumulates the timed sections of a benchmark.
type meter struct {
	elapsed, cpu   time.Duration
	rss, peak      int64 // growth, summed over sections
	sections       int
	t0             time.Time
	c0             time.Duration
	rss0           int64
	peakResettable bool
}

// start begins a timed section, after returning freed memory to the OS
// and resetting the peak resident size, so that both are measured from
// here.
func (m *meter) start() {
	debug.FreeOSMemory()
	m.peakResettable = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	m.rss0 = procStatus("VmRSS")
	m.t0, m.c0 = time.Now(), cpuTime()
}

func (m *meter) stop() {
	m.elapsed += time.Since(m.t0)
	m.cpu += cpuTime() - m.c0
	m.rss += max(procStatus("VmRSS")-m.rss0, 0)
	if m.peakResettable {
		m.peak += max(procStatus("VmHWM")-m.rss0, 0)
	}
	m.sections++
}

func (m *meter) report(b *testing.B, ads, mhs int) {
	b.ReportMetric(float64(ads)/m.elapsed.Seconds(), "ads/s")
	if mhs == 0 {
		b.ReportMetric(m.cpu.Seconds()/float64(ads)*1e6, "cpu-us/ad")
		return
	}
	n := float64(mhs)
	b.ReportMetric(n/m.elapsed.Seconds(), "mh/s")
	b.ReportMetric(m.cpu.Seconds()/(n/1e6), "cpu-s/Mmh")
	b.ReportMetric(n/m.cpu.Seconds(), "mh/cpu-s")
	if m.rss0 > 0 {
		b.ReportMetric(float64(m.rss)/n, "rss-B/mh")
	}
	if m.peakResettable {
		b.ReportMetric(float64(m.peak)/n, "peak-rss-B/mh")
	}
}

// benchRawPut puts the chain's multihashes into a fresh store, one Put per
// ad, and flushes.
func benchRawPut(b *testing.B, chain *chaingen.Chain, open func(testing.TB) store.Store) {
	vals, mhs := chainEntries(b, chain)
	ctx := context.Background()
	n := 0
	var m meter
	for range b.N {
		b.StopTimer()
		st := open(b)
		m.start()
		b.StartTimer()
		for i, v := range vals {
			if err := st.Put(ctx, v, mhs[i]...); err != nil {
				b.Fatal(err)
			}
			n += len(mhs[i])
		}
		if err := st.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		m.stop()
		_ = st.Close()
		b.StartTimer()
	}
	m.report(b, len(vals)*b.N, n)
}

// httpPublisher serves chain with our ipnisync Publisher on 127.0.0.1 and
// returns its address; the server closes with b.
func httpPublisher(b testing.TB, chain *chaingen.Chain) []multiaddr.Multiaddr {
	pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
	if err != nil {
		b.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), chain.Head()); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(pub)
	srv.Listener = ln
	srv.Start()
	b.Cleanup(srv.Close)
	port := ln.Addr().(*net.TCPAddr).Port
	return []multiaddr.Multiaddr{multiaddr.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", port))}
}

// loopbackPool is the dial policy of the benchmark's publishers, which
// listen on loopback: a private pool's.
var loopbackPool, _ = netpolicy.New(netpolicy.AllowPrivate())

// httpSyncers is a SyncerFunc making an ipnisync.Client from the announced
// addresses, as a node does; close closes the clients it made.
type httpSyncers struct {
	mu      sync.Mutex
	clients []*ipnisync.Client
}

func (h *httpSyncers) syncer(p peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
	cl, err := ipnisync.New(peer.AddrInfo{ID: p, Addrs: addrs}, ipnisync.WithDialPolicy(loopbackPool))
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.clients = append(h.clients, cl)
	h.mu.Unlock()
	return cl, nil
}

func (h *httpSyncers) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cl := range h.clients {
		_ = cl.Close()
	}
	h.clients = nil
}

// benchWalk ingests chain into a fresh store per iteration with ingest.New
// and Sync: over HTTP with the walker state in go-ds-leveldb on disk, or
// from memory with a map datastore.
func benchWalk(b *testing.B, chain *chaingen.Chain, open func(testing.TB) store.Store, overHTTP bool, mhsPerWalk int) {
	ctx := context.Background()
	var (
		addrs     = testAddrs
		newSyncer ingest.SyncerFunc
		hs        httpSyncers
	)
	if overHTTP {
		addrs = httpPublisher(b, chain)
		newSyncer = hs.syncer
	} else {
		srcs := newSources()
		srcs.set(chain.Publisher, chain.Source())
		newSyncer = srcs.syncer
	}
	var m meter
	for i := range b.N {
		b.StopTimer()
		st := open(b)
		var ds datastore.Batching
		var closeDS func() error
		if overHTTP {
			lds, err := dsleveldb.NewDatastore(filepath.Join(b.TempDir(), fmt.Sprintf("walker-%d", i)), nil)
			if err != nil {
				b.Fatal(err)
			}
			ds, closeDS = lds, lds.Close
		} else {
			ds, closeDS = newDS(), func() error { return nil }
		}
		ing, err := ingest.New(st, ds, newSyncer)
		if err != nil {
			b.Fatal(err)
		}
		m.start()
		b.StartTimer()
		if err := ing.Sync(ctx, chain.Publisher, addrs, cid.Undef); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		m.stop()
		if s, _ := ing.Status(chain.Publisher); s.AdsApplied != uint64(chain.Len()) || s.EntriesIndexed != uint64(mhsPerWalk) {
			b.Fatalf("applied %d ads and %d entries, want %d and %d", s.AdsApplied, s.EntriesIndexed, chain.Len(), mhsPerWalk)
		}
		hs.close()
		_ = closeDS()
		_ = st.Close()
		b.StartTimer()
	}
	m.report(b, chain.Len()*b.N, mhsPerWalk*b.N)
}
