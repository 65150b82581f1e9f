package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// Benchmarks. Every backend benchmarks its store and, in the same run, the
// raw engine it is built on writing and reading the same keys, so that the
// ratio of the two is the figure to report. Results are named
// Benchmark<Op>/<params>/store and Benchmark<Op>/<params>/raw, and carry
// these metrics:
//
//	mh/s, gets/s, ops/s   throughput over the timed section
//	cpu-s/Mmh, cpu-s/Mget process CPU (user+sys, background work included)
//	size-B/mh             Size per stored multihash after the load: bytes
//	                      on disk for disk stores, the estimate of heap held
//	                      for the memory store
//	rss-B/mh              growth of resident memory per stored multihash;
//	                      meaningful in the first run of a process only, as
//	                      the Go runtime keeps freed memory for reuse
//
// The number of multihashes loaded comes from INDEXKIT_BENCH_KEYS
// (default 1,000,000).

// Raw is a raw engine baseline: the engine under a backend, driven directly
// with the keys the backend would write. Implementations live in the
// backends' test files.
type Raw interface {
	// Write commits one batch holding the index entries of mhs for the
	// value record id, as the backend's Put would.
	Write(mhs []multihash.Multihash, id uint64) error
	// Get reads the entry of (mh, id) with a point read and reports whether
	// it exists.
	Get(mh multihash.Multihash, id uint64) (bool, error)
	// Sync makes every write durable, as the store's Flush does.
	Sync() error
	// Settle moves in-memory writes to their resting place (for example a
	// memtable flush), so that reads measure the engine at rest.
	Settle() error
	// Size returns the bytes used on disk (0 for memory).
	Size() (int64, error)
	Close() error
}

// Settler is implemented by stores that can move in-memory writes to their
// resting place; the benchmarks call it after loading, before reading.
type Settler interface {
	Settle() error
}

// BenchKeys returns the number of multihashes a benchmark loads.
func BenchKeys() int {
	if s := os.Getenv("INDEXKIT_BENCH_KEYS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// benchData is a load of keys multihashes split into Puts of batch, each Put
// under its own context (as one advertisement is).
type benchData struct {
	batches [][]multihash.Multihash
	misses  []multihash.Multihash
}

var benchCache = map[[2]int]*benchData{}

func loadData(keys, batch int) *benchData {
	if d := benchCache[[2]int{keys, batch}]; d != nil {
		return d
	}
	r := rand.New(rand.NewPCG(1413, uint64(keys)))
	random := func() multihash.Multihash {
		mh := make([]byte, 34)
		mh[0], mh[1] = 0x12, 0x20
		for i := 2; i < len(mh); i += 8 {
			v := r.Uint64()
			for j := 0; j < 8 && i+j < len(mh); j++ {
				mh[i+j] = byte(v >> (8 * j))
			}
		}
		return mh
	}
	d := &benchData{}
	for left := keys; left > 0; left -= batch {
		n := min(batch, left)
		mhs := make([]multihash.Multihash, n)
		for i := range mhs {
			mhs[i] = random()
		}
		d.batches = append(d.batches, mhs)
	}
	d.misses = make([]multihash.Multihash, 1000)
	for i := range d.misses {
		d.misses[i] = random()
	}
	benchCache[[2]int{keys, batch}] = d
	return d
}

func benchValue(i int) store.Value {
	return store.Value{
		ProviderID: PeerID(strconv.Itoa(i % 8)),
		ContextID:  []byte(fmt.Sprintf("context-%08d", i)),
		Metadata:   []byte("\x80\x12bench-metadata-graphsync-0123456789"),
	}
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss returns the resident set size in bytes, or 0 where unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}

type meter struct {
	start time.Time
	cpu   time.Duration
}

func startMeter() meter { return meter{time.Now(), cpuTime()} }

func (m meter) report(b *testing.B, n int, rateUnit, cpuUnit string) {
	elapsed, cpu := time.Since(m.start), cpuTime()-m.cpu
	b.ReportMetric(float64(n)/elapsed.Seconds(), rateUnit)
	b.ReportMetric(cpu.Seconds()/float64(n)*1e6, cpuUnit)
}

// BenchPut measures loading BenchKeys() multihashes, in Puts of batch each,
// into a fresh store per iteration, up to and including a final Flush.
func BenchPut(b *testing.B, open func(b *testing.B) store.Store, batch int) {
	d := loadData(BenchKeys(), batch)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		rss0 := rss()
		s := open(b)
		b.StartTimer()
		m := startMeter()
		n := 0
		for i, mhs := range d.batches {
			if err := s.Put(ctx, benchValue(i), mhs...); err != nil {
				b.Fatal(err)
			}
			n += len(mhs)
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		m.report(b, n, "mh/s", "cpu-s/Mmh")
		b.StopTimer()
		reportFootprint(b, n, rss0, func() (int64, error) {
			if st, ok := s.(Settler); ok {
				if err := st.Settle(); err != nil {
					return 0, err
				}
			}
			return s.Size(ctx)
		})
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchRawPut is BenchPut for a raw engine.
func BenchRawPut(b *testing.B, open func(b *testing.B) Raw, batch int) {
	d := loadData(BenchKeys(), batch)
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		rss0 := rss()
		r := open(b)
		b.StartTimer()
		m := startMeter()
		n := 0
		for i, mhs := range d.batches {
			if err := r.Write(mhs, uint64(i)); err != nil {
				b.Fatal(err)
			}
			n += len(mhs)
		}
		if err := r.Sync(); err != nil {
			b.Fatal(err)
		}
		m.report(b, n, "mh/s", "cpu-s/Mmh")
		b.StopTimer()
		reportFootprint(b, n, rss0, func() (int64, error) {
			if err := r.Settle(); err != nil {
				return 0, err
			}
			return r.Size()
		})
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func reportFootprint(b *testing.B, n int, rss0 int64, size func() (int64, error)) {
	if grown := rss() - rss0; rss0 > 0 && grown > 0 {
		b.ReportMetric(float64(grown)/float64(n), "rss-B/mh")
	}
	sz, err := size()
	if err != nil {
		b.Fatal(err)
	}
	if sz > 0 {
		b.ReportMetric(float64(sz)/float64(n), "size-B/mh")
	}
}

// getMix is the lookup sequence: three hits for every miss, in a fixed
// random order.
func getMix(d *benchData, count int) (mhs []multihash.Multihash, batchOf []int) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range count {
		if i%4 == 3 {
			mhs = append(mhs, d.misses[r.IntN(len(d.misses))])
			batchOf = append(batchOf, -1)
			continue
		}
		bi := r.IntN(len(d.batches))
		mhs = append(mhs, d.batches[bi][r.IntN(len(d.batches[bi]))])
		batchOf = append(batchOf, bi)
	}
	return mhs, batchOf
}

const getBatch = 1000

// BenchGet loads BenchKeys() multihashes once, settles the store, then
// measures random lookups, three hits to one miss, b.N lookups in all.
func BenchGet(b *testing.B, open func(b *testing.B) store.Store) {
	ctx := context.Background()
	s := open(b)
	defer s.Close()
	mhs, batchOf := loadGetStore(b, s)
	b.ResetTimer()
	m := startMeter()
	i := 0
	for b.Loop() {
		k := i % len(mhs)
		vals, err := s.Get(ctx, mhs[k])
		if err != nil {
			b.Fatal(err)
		}
		if (len(vals) == 1) != (batchOf[k] >= 0) {
			b.Fatalf("lookup %d: %d values, hit=%v", k, len(vals), batchOf[k] >= 0)
		}
		i++
	}
	m.report(b, b.N, "gets/s", "cpu-s/Mget")
}

// BenchRawGet is BenchGet for a raw engine: one point read per lookup.
func BenchRawGet(b *testing.B, open func(b *testing.B) Raw) {
	r := open(b)
	defer r.Close()
	mhs, batchOf := loadGetRaw(b, r)
	b.ResetTimer()
	m := startMeter()
	i := 0
	for b.Loop() {
		k := i % len(mhs)
		id := uint64(max(batchOf[k], 0))
		found, err := r.Get(mhs[k], id)
		if err != nil {
			b.Fatal(err)
		}
		if found != (batchOf[k] >= 0) {
			b.Fatalf("raw lookup %d: found=%v", k, found)
		}
		i++
	}
	m.report(b, b.N, "gets/s", "cpu-s/Mget")
}

// BenchUpdateMetadata measures UpdateMetadata of one context that covers
// size multihashes; its cost must not depend on size.
func BenchUpdateMetadata(b *testing.B, open func(b *testing.B) store.Store, size int) {
	ctx := context.Background()
	s := open(b)
	defer s.Close()
	v := benchValue(0)
	mhs := Multihashes("update-bench", size)
	for len(mhs) > 0 {
		n := min(len(mhs), 10_000)
		if err := s.Put(ctx, v, mhs[:n]...); err != nil {
			b.Fatal(err)
		}
		mhs = mhs[n:]
	}
	md := [2][]byte{[]byte("metadata-a"), []byte("metadata-b")}
	b.ResetTimer()
	m := startMeter()
	i := 0
	for b.Loop() {
		if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, md[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	m.report(b, b.N, "ops/s", "cpu-s/Mop")
}

// BenchRawUpdate is the floor for an update: one single-key batch commit.
func BenchRawUpdate(b *testing.B, open func(b *testing.B) Raw) {
	r := open(b)
	defer r.Close()
	mh := []multihash.Multihash{Multihash("update-bench", 0)}
	b.ResetTimer()
	m := startMeter()
	i := 0
	for b.Loop() {
		if err := r.Write(mh, uint64(i%2)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	m.report(b, b.N, "ops/s", "cpu-s/Mop")
}

// ComparePut runs BenchPut and BenchRawPut side by side, as
// batch=N/store and batch=N/raw, for Puts of 1,000 and 10,000 multihashes.
// A backend's BenchmarkPut is one call to it.
func ComparePut(b *testing.B, open func(*testing.B) store.Store, raw func(*testing.B) Raw) {
	for _, batch := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("batch=%d/store", batch), func(b *testing.B) { BenchPut(b, open, batch) })
		b.Run(fmt.Sprintf("batch=%d/raw", batch), func(b *testing.B) { BenchRawPut(b, raw, batch) })
	}
}

// CompareGet runs BenchGet and BenchRawGet side by side, as store and raw.
func CompareGet(b *testing.B, open func(*testing.B) store.Store, raw func(*testing.B) Raw) {
	b.Run("store", func(b *testing.B) { BenchGet(b, open) })
	b.Run("raw", func(b *testing.B) { BenchRawGet(b, raw) })
}

// CompareUpdateMetadata runs BenchUpdateMetadata for contexts of 10 and
// 100,000 multihashes, each beside the raw floor of an update (a one-key
// commit, whatever the size), as mh=N/store and mh=N/raw.
func CompareUpdateMetadata(b *testing.B, open func(*testing.B) store.Store, raw func(*testing.B) Raw) {
	for _, size := range []int{10, 100000} {
		b.Run(fmt.Sprintf("mh=%d/store", size), func(b *testing.B) { BenchUpdateMetadata(b, open, size) })
		b.Run(fmt.Sprintf("mh=%d/raw", size), func(b *testing.B) { BenchRawUpdate(b, raw) })
	}
}

// loadGetStore fills s with the Get benchmarks' data, lets it settle, and
// returns the lookup sequence with the batch of each lookup (-1: a miss).
func loadGetStore(b *testing.B, s store.Store) ([]multihash.Multihash, []int) {
	d := loadData(BenchKeys(), getBatch)
	ctx := context.Background()
	for i, mhs := range d.batches {
		if err := s.Put(ctx, benchValue(i), mhs...); err != nil {
			b.Fatal(err)
		}
	}
	if st, ok := s.(Settler); ok {
		if err := st.Settle(); err != nil {
			b.Fatal(err)
		}
	}
	return getMix(d, 100_000)
}

// loadGetRaw is loadGetStore for a raw engine.
func loadGetRaw(b *testing.B, r Raw) ([]multihash.Multihash, []int) {
	d := loadData(BenchKeys(), getBatch)
	for i, mhs := range d.batches {
		if err := r.Write(mhs, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Settle(); err != nil {
		b.Fatal(err)
	}
	return getMix(d, 100_000)
}
