package ingest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/store"
)

// The chain shapes of the publisher benchmarks: four publishers, each with
// its own signed chain, 1,048,576 multihashes in all, in entry chunks of
// 1,000 multihashes (as the reference publishers write them) or of 16,384
// (the largest chunks deployed publishers use).
var benchShapes = []struct {
	name string
	cfgs []chaingen.Config
}{
	{"chunk1000", fourChains(chaingen.Config{Ads: 32, MhsPerAd: 8192, ChunkSize: 1000})},
	{"chunk16384", fourChains(chaingen.Config{Ads: 4, MhsPerAd: 65_536, ChunkSize: 16_384})},
}

func fourChains(cfg chaingen.Config) []chaingen.Config {
	cfgs := make([]chaingen.Config, 4)
	for i := range cfgs {
		cfgs[i] = cfg
		cfgs[i].Seed = uint64(100 + i)
	}
	return cfgs
}

// benchPubsEnv holds the JSON of the chaingen configs a re-executed test
// binary serves as the publishers of benchPublishers.
const benchPubsEnv = "INDEXKIT_INGEST_BENCH_PUBLISHERS"

// servedChain is what the publisher process tells its parent of a chain.
type servedChain struct {
	Publisher peer.ID
	Addr      string // the HTTP multiaddr
	Ads, Mhs  int
}

// benchPublishersChild is the publisher process: it generates the chains
// of the configs in benchPubsEnv, serves each with an ingest/ipnisync
// Publisher on its own 127.0.0.1 listener, writes one JSON servedChain line
// per chain on standard output, and serves until standard input closes.
func benchPublishersChild() error {
	var cfgs []chaingen.Config
	if err := json.Unmarshal([]byte(os.Getenv(benchPubsEnv)), &cfgs); err != nil {
		return err
	}
	var servers []*http.Server
	for _, cfg := range cfgs {
		chain, err := chaingen.Generate(cfg)
		if err != nil {
			return err
		}
		pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
		if err != nil {
			return err
		}
		if err := pub.SetHead(context.Background(), chain.Head()); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: pub, ReadHeaderTimeout: time.Minute}
		go func() { _ = srv.Serve(ln) }()
		servers = append(servers, srv)
		line, err := json.Marshal(servedChain{
			Publisher: chain.Publisher,
			Addr:      fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", ln.Addr().(*net.TCPAddr).Port),
			Ads:       cfg.Ads,
			Mhs:       cfg.Ads * cfg.MhsPerAd,
		})
		if err != nil {
			return err
		}
		fmt.Println(string(line))
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, srv := range servers {
		_ = srv.Close()
	}
	return nil
}

// benchPublishers starts a publisher process serving the chains of cfgs
// and returns what it serves; the process ends with b.
func benchPublishers(b *testing.B, cfgs []chaingen.Config) []servedChain {
	env, err := json.Marshal(cfgs)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchPubsEnv+"="+string(env))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var served []servedChain
	sc := bufio.NewScanner(stdout)
	for len(served) < len(cfgs) && sc.Scan() {
		var s servedChain
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			b.Fatalf("publisher process: %q: %v", sc.Text(), err)
		}
		served = append(served, s)
	}
	if len(served) < len(cfgs) {
		b.Fatalf("publisher process served %d chains of %d: %v", len(served), len(cfgs), sc.Err())
	}
	return served
}

// discardStore is the baseline store of the publisher benchmarks, not a
// backend: it counts the multihashes Put and keeps none of them (Get finds
// nothing), and keeps provider records in a map, so that a walk into it
// costs everything ingest does but the index write. It is safe for
// concurrent use.
type discardStore struct {
	mhs  atomic.Int64
	mu   sync.Mutex
	recs map[peer.ID]store.ProviderInfo
}

func newDiscardStore(testing.TB) store.Store {
	return &discardStore{recs: make(map[peer.ID]store.ProviderInfo)}
}

func (d *discardStore) Put(_ context.Context, _ store.Value, mhs ...multihash.Multihash) error {
	d.mhs.Add(int64(len(mhs)))
	return nil
}
func (d *discardStore) Get(context.Context, multihash.Multihash) ([]store.Value, error) {
	return nil, nil
}
func (d *discardStore) Remove(context.Context, peer.ID, []byte, ...multihash.Multihash) error {
	return nil
}
func (d *discardStore) RemoveProviderContext(context.Context, peer.ID, []byte) error { return nil }
func (d *discardStore) RemoveProvider(context.Context, peer.ID) error                { return nil }
func (d *discardStore) UpdateMetadata(context.Context, peer.ID, []byte, []byte) error {
	return store.ErrNotFound
}
func (d *discardStore) PutProvider(_ context.Context, info store.ProviderInfo) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recs[info.AddrInfo.ID] = info
	return nil
}
func (d *discardStore) Provider(_ context.Context, id peer.ID) (store.ProviderInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if info, ok := d.recs[id]; ok {
		return info, nil
	}
	return store.ProviderInfo{}, store.ErrNotFound
}
func (d *discardStore) Providers(context.Context) iter.Seq2[store.ProviderInfo, error] {
	return func(func(store.ProviderInfo, error) bool) {}
}
func (d *discardStore) DeleteProvider(_ context.Context, id peer.ID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.recs, id)
	return nil
}
func (d *discardStore) All(context.Context) iter.Seq2[store.Entry, error] {
	return func(func(store.Entry, error) bool) {}
}
func (d *discardStore) Size(context.Context) (int64, error) { return 0, nil }
func (d *discardStore) Flush(context.Context) error         { return nil }
func (d *discardStore) Close() error                        { return nil }

// benchIngestShapes adds to BenchmarkIngest, for each chain shape of
// benchShapes:
//
//	pebble/pubs4/<shape>   four publishers served over HTTP by another
//	                       process (so that the process CPU measured is the
//	                       node's alone), walked at once by one Ingester
//	                       into Pebble, walker state in go-ds-leveldb; in
//	                       each iteration the same walk into a discardStore
//	                       is the baseline.
//
// Metrics, from getrusage of this process over the timed sections:
//
//	mh/cpu-s             multihashes per CPU-second, into Pebble (the
//	                     issue's figure)
//	cpu-s/Mmh            CPU per million multihashes, into Pebble
//	nonstore-cpu-s/Mmh   CPU per million multihashes into the discardStore:
//	                     fetching, verifying, decoding, walking, batching
//	nonstore-mh/cpu-s    the same as a rate
//	store-cpu-s/Mmh      the difference: what the index write costs
//	mh/s                 wall-clock rate into Pebble
//	nonstore-mh/s        wall-clock rate into the discardStore
//
// ns/op is the time of the walk into Pebble (with its setup); the CPU
// profile labels the two walks store=pebble and store=discard.
func benchIngestShapes(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run("pebble/pubs4/"+shape.name, func(b *testing.B) {
			served := benchPublishers(b, shape.cfgs)
			b.ResetTimer()
			open := benchBackends[1].open // pebble
			var real, base meter
			mhs := 0
			for i := range b.N {
				// Labelled, so that a CPU profile of the run shows each
				// side apart: go tool pprof -tagfocus store=discard.
				pprof.Do(context.Background(), pprof.Labels("store", "pebble", "shape", shape.name), func(context.Context) {
					benchPubsWalk(b, served, open, &real, i)
				})
				b.StopTimer()
				pprof.Do(context.Background(), pprof.Labels("store", "discard", "shape", shape.name), func(context.Context) {
					benchPubsWalk(b, served, newDiscardStore, &base, i)
				})
				b.StartTimer()
				for _, s := range served {
					mhs += s.Mhs
				}
			}
			n := float64(mhs)
			b.ReportMetric(n/real.cpu.Seconds(), "mh/cpu-s")
			b.ReportMetric(real.cpu.Seconds()/(n/1e6), "cpu-s/Mmh")
			b.ReportMetric(base.cpu.Seconds()/(n/1e6), "nonstore-cpu-s/Mmh")
			b.ReportMetric(n/base.cpu.Seconds(), "nonstore-mh/cpu-s")
			b.ReportMetric((real.cpu-base.cpu).Seconds()/(n/1e6), "store-cpu-s/Mmh")
			b.ReportMetric(n/real.elapsed.Seconds(), "mh/s")
			b.ReportMetric(n/base.elapsed.Seconds(), "nonstore-mh/s")
		})
	}
}

// benchPubsWalk ingests the served chains into a fresh store, all
// publishers at once, timing it with m, and checks that every ad and
// multihash arrived.
func benchPubsWalk(b *testing.B, served []servedChain, open func(testing.TB) store.Store, m *meter, iter int) {
	ctx := context.Background()
	st := open(b)
	defer st.Close()
	lds, err := dsleveldb.NewDatastore(filepath.Join(b.TempDir(), fmt.Sprintf("walker-%d", iter)), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer lds.Close()
	var hs httpSyncers
	defer hs.close()
	ing, err := ingest.New(st, lds, hs.syncer)
	if err != nil {
		b.Fatal(err)
	}
	errs := make([]error, len(served))
	var wg sync.WaitGroup
	m.start()
	for i, s := range served {
		wg.Go(func() {
			errs[i] = ing.Sync(ctx, s.Publisher, []multiaddr.Multiaddr{multiaddr.StringCast(s.Addr)}, cid.Undef)
		})
	}
	wg.Wait()
	m.stop()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	for _, s := range served {
		if st, _ := ing.Status(s.Publisher); st.AdsApplied != uint64(s.Ads) || st.EntriesIndexed != uint64(s.Mhs) {
			b.Fatalf("publisher %s: applied %d ads and %d entries, want %d and %d", s.Publisher, st.AdsApplied, st.EntriesIndexed, s.Ads, s.Mhs)
		}
	}
	if d, ok := st.(*discardStore); ok {
		want := 0
		for _, s := range served {
			want += s.Mhs
		}
		if got := d.mhs.Load(); got != int64(want) {
			b.Fatalf("discard store got %d multihashes, want %d", got, want)
		}
	}
}
