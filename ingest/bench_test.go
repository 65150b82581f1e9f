package ingest_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/chaingen"
	"github.com/indexkit/indexkit/store"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// BenchmarkIngest walks a generated chain from an in-memory source into
// each store backend, and beside it puts the same multihashes into the
// same backend directly (raw-put), so that the ratio of the two mh/s is
// the cost of ingesting. NoEntries measures a chain of metadata-only ads.
//
// Serving the chain over loopback HTTP through ingest/ipnisync is not
// measured here yet.
func BenchmarkIngest(b *testing.B) {
	entries := chaingen.Config{Seed: 9, Ads: 100, MhsPerAd: 10_000, ChunkSize: 1000}
	noEntries := chaingen.Config{Seed: 10, Ads: 2000}
	for _, be := range backends {
		b.Run(be.name+"/entries", func(b *testing.B) {
			chain := benchChain(b, entries)
			benchWalk(b, chain, be.open, entries.Ads*entries.MhsPerAd)
		})
		b.Run(be.name+"/raw-put", func(b *testing.B) {
			chain := benchChain(b, entries)
			vals, mhs := chainEntries(b, chain)
			ctx := context.Background()
			n := 0
			var elapsed, cpu time.Duration
			for range b.N {
				b.StopTimer()
				st := be.open(b)
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				for i, v := range vals {
					if err := st.Put(ctx, v, mhs[i]...); err != nil {
						b.Fatal(err)
					}
					n += len(mhs[i])
				}
				if err := st.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(t0)
				cpu += cpuTime() - c0
				b.StopTimer()
				_ = st.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n)/elapsed.Seconds(), "mh/s")
			b.ReportMetric(cpu.Seconds()/(float64(n)/1e6), "cpu-s/Mmh")
		})
		b.Run(be.name+"/noentries", func(b *testing.B) {
			chain := benchChain(b, noEntries)
			benchWalk(b, chain, be.open, 0)
		})
	}
}

func benchWalk(b *testing.B, chain *chaingen.Chain, open func(testing.TB) store.Store, mhsPerWalk int) {
	ctx := context.Background()
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	var elapsed, cpu time.Duration
	for range b.N {
		b.StopTimer()
		st := open(b)
		ing, err := ingest.New(st, newDS(), srcs.syncer)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime()
		if err := ing.Sync(ctx, chain.Publisher, testAddrs, cid.Undef); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
		cpu += cpuTime() - c0
		b.StopTimer()
		_ = st.Close()
		b.StartTimer()
	}
	ads := float64(chain.Len() * b.N)
	b.ReportMetric(ads/elapsed.Seconds(), "ads/s")
	if mhsPerWalk > 0 {
		n := float64(mhsPerWalk * b.N)
		b.ReportMetric(n/elapsed.Seconds(), "mh/s")
		b.ReportMetric(cpu.Seconds()/(n/1e6), "cpu-s/Mmh")
	}
}
