//go:build linux

package pebble_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/indexkit/indexkit/store"
	ikpebble "github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// writeRoute is one way of configuring the store, measured by
// BenchmarkWrite.
type writeRoute struct {
	name string
	opts func() []ikpebble.Option
	// flushEvery, if set, Flushes the store after every so many Puts, as
	// an ingest checkpoint does (every 64 ads by default).
	flushEvery int
}

// writeRoutes are the configurations BenchmarkWrite compares; "today" is
// the store as it was before issue #17, the others change one thing each
// or combine what paid.
var writeRoutes = []writeRoute{
	{"today", func() []ikpebble.Option { return []ikpebble.Option{ikpebble.WithOptions(todayOptions())} }, 0},
	{"nocompress", func() []ikpebble.Option {
		o := todayOptions()
		for i := range o.Levels {
			o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		}
		return []ikpebble.Option{ikpebble.WithOptions(o)}
	}, 0},
	{"columnar", func() []ikpebble.Option {
		o := todayOptions()
		o.FormatMajorVersion = pebble.FormatNewest
		return []ikpebble.Option{ikpebble.WithOptions(o)}
	}, 0},
	{"nowal", func() []ikpebble.Option {
		o := todayOptions()
		o.DisableWAL = true
		return []ikpebble.Option{ikpebble.WithOptions(o)}
	}, 0},
	{"nowal-mem16", func() []ikpebble.Option {
		o := todayOptions()
		o.DisableWAL = true
		o.MemTableSize = 16 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o)}
	}, 0},
	{"nowal-mem256", func() []ikpebble.Option {
		o := todayOptions()
		o.DisableWAL = true
		o.MemTableSize = 256 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o)}
	}, 0},
	{"prefix", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithOptions(todayOptions()), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	// "prefix" without context populations (the sampling API's).
	{"prefix-nopop", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithOptions(todayOptions()), ikpebble.WithDigestPrefixKeys(), ikpebble.WithoutPopulations()}
	}, 0},
	{"default", func() []ikpebble.Option { return nil }, 0},
	// examples/indexernode with -index-no-wal ("prefix" is its default).
	{"node", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"node-flush64", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 64},
	{"node-flush8", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 8},
	{"node-flush1", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 1},
	{"node-flush1-l0", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.L0CompactionThreshold = 8
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 1},
	{"wal-flush1", func() []ikpebble.Option { return []ikpebble.Option{ikpebble.WithDigestPrefixKeys()} }, 1},
	{"node-l0-lbase", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.L0CompactionThreshold = 8
		o.LBaseMaxBytes = 512 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	// Sorted runs (WithSortedRuns) of 32 MiB, with the log on: the index
	// bypasses memtable and log.
	{"runs", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	// "runs" without a lookup cache: what dropping the written keys'
	// entries costs a write.
	{"runs-nolookups", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys(), ikpebble.WithLookupCache(0)}
	}, 0},
	{"runs-flush64", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 64},
	{"runs-flush8", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 8},
	{"runs-flush1", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 1},
	// Runs with the 64 MiB base level of DefaultOptions, then with fewer,
	// larger compactions: more L0 sublevels before compacting into the
	// base level, and a larger base level.
	{"runs-lbase64", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.LBaseMaxBytes = 64 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"runs-l0", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.L0CompactionThreshold = 8
		o.LBaseMaxBytes = 64 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"runs-l0-lbase", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.L0CompactionThreshold = 8
		o.LBaseMaxBytes = 512 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"runs-lbase", func() []ikpebble.Option {
		o := ikpebble.DefaultOptions()
		o.LBaseMaxBytes = 512 << 20
		return []ikpebble.Option{ikpebble.WithOptions(o), ikpebble.WithSortedRuns(32 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"runs64", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithSortedRuns(64 << 20), ikpebble.WithDigestPrefixKeys()}
	}, 0},
	{"node-mem32", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys(), ikpebble.WithMemTableSize(32 << 20)}
	}, 0},
	{"node-mem128", func() []ikpebble.Option {
		return []ikpebble.Option{ikpebble.WithoutWAL(), ikpebble.WithDigestPrefixKeys(), ikpebble.WithMemTableSize(128 << 20)}
	}, 0},
}

// todayOptions are DefaultOptions as they were before issue #17: the
// oldest format Pebble supports, Snappy on every level.
func todayOptions() *pebble.Options {
	o := ikpebble.DefaultOptions()
	o.FormatMajorVersion = pebble.FormatMinSupported
	for i := range o.Levels {
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	}
	return o
}

// writeLoad is keys random sha2-256 multihashes in Puts of batch, one
// context each.
func writeLoad(keys, batch int) [][]multihash.Multihash {
	r := rand.New(rand.NewPCG(17, uint64(keys)))
	var out [][]multihash.Multihash
	for left := keys; left > 0; left -= batch {
		mhs := make([]multihash.Multihash, min(batch, left))
		for i := range mhs {
			mh := make([]byte, 34)
			mh[0], mh[1] = 0x12, 0x20
			for j := 2; j < 34; j += 8 {
				v := r.Uint64()
				for k := 0; k < 8 && j+k < 34; k++ {
					mh[j+k] = byte(v >> (8 * k))
				}
			}
			mhs[i] = mh
		}
		out = append(out, mhs)
	}
	return out
}

// BenchmarkWrite loads INDEXKIT_BENCH_KEYS (default 1,000,000) random
// multihashes, in Puts of 1,000 (one context each, as an advertisement
// is), into a store per route of writeRoutes and into raw Pebble (Sets of
// the same keys, the options of "today"), in one process so that the
// ratios hold. Each measure is timed from the first Put through the
// store's Flush and a memtable flush (so that every route has its keys in
// tables), and reports:
//
//	mh/cpu-s     multihashes per CPU-second of the process (user+sys,
//	             Pebble's background flushes and compactions included)
//	alloc-B/mh   bytes allocated on disk (st_blocks) under the directory,
//	             write-ahead logs included, at the end of the timed section
//	debt-B/mh    Pebble's estimated compaction debt then
//	settled-B/mh bytes allocated after a full manual compaction
//	settle-cpu-s/Mmh the CPU that compaction took: debt paid later
func BenchmarkWrite(b *testing.B) {
	keys := storetest.BenchKeys()
	load := writeLoad(keys, 1000)
	nocompress := func(o *pebble.Options) {
		for i := range o.Levels {
			o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		}
	}
	columnar := func(o *pebble.Options) { o.FormatMajorVersion = pebble.FormatNewest }
	for _, rr := range []struct {
		name   string
		sorted bool
		digest int // digest bytes kept in the key; 0: the whole multihash
		opts   []func(*pebble.Options)
	}{
		{"raw", false, 0, nil},
		{"raw-sorted", true, 0, nil},
		{"raw-sorted-prefix20", true, 20, nil},
		{"raw-sorted-columnar-nocompress", true, 0, []func(*pebble.Options){columnar, nocompress}},
		{"raw-sorted-prefix20-columnar", true, 20, []func(*pebble.Options){columnar}},
		{"raw-sorted-prefix20-columnar-nocompress", true, 20, []func(*pebble.Options){columnar, nocompress}},
	} {
		b.Run(rr.name, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				o := todayOptions()
				o.Logger = quiet{}
				for _, f := range rr.opts {
					f(o)
				}
				db, err := pebble.Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				var key []byte
				measureWrite(b, dir, db, keys, func() error {
					for i, mhs := range load {
						if rr.sorted {
							mhs = slices.Clone(mhs)
							slices.SortFunc(mhs, func(x, y multihash.Multihash) int { return bytes.Compare(x, y) })
						}
						bt := db.NewBatch()
						v := binary.AppendUvarint(nil, uint64(i)<<1)
						for _, mh := range mhs {
							if rr.digest > 0 {
								mh = mh[:2+rr.digest] // sha2-256: code and length, 2 bytes
							}
							key = append(append(append(key[:0], 0x01), mh...), 0)
							if err := bt.Set(key, v, nil); err != nil {
								return err
							}
						}
						if err := bt.Commit(pebble.NoSync); err != nil {
							return err
						}
						bt.Close()
					}
					return db.LogData(nil, pebble.Sync)
				})
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	ctx := context.Background()
	for _, r := range writeRoutes {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				s, err := ikpebble.Open(dir, r.opts()...)
				if err != nil {
					b.Fatal(err)
				}
				measureWrite(b, dir, s.Pebble(), keys, func() error {
					for i, mhs := range load {
						v := store.Value{
							ProviderID: storetest.PeerID(strconv.Itoa(i % 8)),
							ContextID:  fmt.Appendf(nil, "context-%08d", i),
							Metadata:   []byte("\x80\x12bench-metadata-graphsync-0123456789"),
						}
						if err := s.Put(ctx, v, mhs...); err != nil {
							return err
						}
						if r.flushEvery > 0 && (i+1)%r.flushEvery == 0 {
							if err := s.Flush(ctx); err != nil {
								return err
							}
						}
					}
					return s.Flush(ctx)
				})
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func measureWrite(b *testing.B, dir string, db *pebble.DB, keys int, write func() error) {
	cpu0 := cpuTime()
	start := time.Now()
	if err := write(); err != nil {
		b.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	cpu, wall := cpuTime()-cpu0, time.Since(start)
	b.StopTimer()
	defer b.StartTimer()
	n := float64(keys)
	b.ReportMetric(n/cpu.Seconds(), "mh/cpu-s")
	b.ReportMetric(n/wall.Seconds(), "mh/s")
	b.ReportMetric(float64(allocated(b, dir))/n, "alloc-B/mh")
	b.ReportMetric(float64(db.Metrics().Compact.EstimatedDebt)/n, "debt-B/mh")
	cpu0 = cpuTime()
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/n*1e6, "settle-cpu-s/Mmh")
	// Pebble deletes obsolete tables in the background, paced: wait.
	for i := 0; i < 100 && db.Metrics().Table.ObsoleteCount > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	b.ReportMetric(float64(allocated(b, dir))/n, "settled-B/mh")
	b.ReportMetric(float64(db.Metrics().Total().TablesSize)/n, "tables-B/mh")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
