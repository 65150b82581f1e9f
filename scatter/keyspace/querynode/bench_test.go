package querynode_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace/querynode"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/pebble"
)

const benchKeys = 1000

func benchOps(b *testing.B, round int) []keyspace.Op {
	op := keyspace.Op{Kind: keyspace.OpPut, Value: store.Value{ProviderID: provider(b, 1), ContextID: []byte{1}, Metadata: []byte("m")}}
	for i := range benchKeys {
		op.Multihashes = append(op.Multihashes, mhOf(b, round*benchKeys+i))
	}
	return []keyspace.Op{op}
}

// BenchmarkBatch posts batches of 1000 multihashes to a node over HTTP on
// 127.0.0.1 (apply, flush, durable position). The baseline applies the
// same ops to the same kind of store directly, with a Flush.
func BenchmarkBatch(b *testing.B) {
	for _, kind := range []string{"memory", "pebble"} {
		b.Run(kind+"/node", func(b *testing.B) {
			c := cluster(b, kind, "q1")
			startNode(b, c["q1"], keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, "q1"), Current: []string{"q1"}, Phase: keyspace.PhaseStable})
			var seq uint64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ops := benchOps(b, i)
				seq++
				mustPost(b, c["q1"].srv.URL, keyspace.Batch{Writer: "w1", Stream: 1, Epoch: 1, Seq: seq, Ops: ops})
			}
			b.ReportMetric(float64(b.N*benchKeys)/b.Elapsed().Seconds(), "keys/s")
		})
		b.Run(kind+"/direct", func(b *testing.B) {
			st := backend(b, kind)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for _, op := range benchOps(b, i) {
					if err := st.Put(ctx, op.Value, op.Multihashes...); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchKeys)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}

// BenchmarkCopy times a join: a node gains about half of a source's keys
// (replication 1, two nodes), pulled over HTTP on 127.0.0.1 from the
// source's export and loaded into a fresh Pebble store opened as
// examples/query opens it (queryStore), by sorted tables and, as the
// baseline in the same run, key by key. The source holds
// INDEXKIT_BENCH_KEYS multihashes (default 1,000,000 with -benchtime 1x
// giving one join per mode) in contexts of 1,000, as advertisements bring
// them. keys/s is multihashes copied per second of the whole copy,
// including the final Flush; keys/cpu-s per second of the CPU the process
// (source and destination both) spent meanwhile, the figure that holds on
// a machine other work shares.
func BenchmarkCopy(b *testing.B) {
	keys := benchCopyKeys()
	c := cluster(b, "memory", "q1", "q2")
	src := c["q1"]
	src.st = queryStore(b)
	ctx := context.Background()
	const perCtx = 1000
	for i := 0; i < keys; i += perCtx {
		v := store.Value{ProviderID: provider(b, 1+i/perCtx%4), ContextID: fmt.Appendf(nil, "ctx-%d", i/perCtx), Metadata: []byte("md")}
		mhs := make([]multihash.Multihash, 0, perCtx)
		for j := i; j < min(i+perCtx, keys); j++ {
			mhs = append(mhs, mhOf(b, j))
		}
		if err := src.st.Put(ctx, v, mhs...); err != nil {
			b.Fatal(err)
		}
	}
	if err := src.st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	// The source at rest: no compaction of the load competes with the copy.
	if err := src.st.(*pebble.Store).Pebble().Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	l1 := keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, "q1"), Current: []string{"q1"}, Phase: keyspace.PhaseStable}
	l2, err := l1.Join(nodesOf(c, "q2")[0])
	if err != nil {
		b.Fatal(err)
	}
	startNode(b, src, l1)
	if err := src.SetLayout(l2); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		mod  func(*querynode.Config)
	}{
		{"tables", func(*querynode.Config) {}},
		{"key-by-key", func(c *querynode.Config) { c.CopyKeyByKey = true }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var copied int64
			var elapsed, cpu time.Duration
			for range b.N {
				b.StopTimer()
				dst := c["q2"]
				dst.close(b)
				dst.st.Close()
				dst.dir = b.TempDir()
				dst.st = queryStore(b)
				startNode(b, dst, l2, mode.mod)
				b.StartTimer()
				start, cpu0 := time.Now(), processCPU(b)
				if code, body := postEpoch(b, dst.srv.URL+keyspace.PathCopy, 2); code != http.StatusAccepted {
					b.Fatalf("copy: %d %s", code, body)
				}
				tk := waitTask(b, dst, 2, copyTask)
				elapsed += time.Since(start)
				cpu += processCPU(b) - cpu0
				if tk.Error != "" {
					b.Fatalf("copy: %+v", tk)
				}
				copied += tk.Keys
			}
			b.ReportMetric(float64(copied)/elapsed.Seconds(), "keys/s")
			b.ReportMetric(float64(copied)/cpu.Seconds(), "keys/cpu-s")
			b.ReportMetric(float64(copied)/float64(b.N), "keys/op")
		})
	}
}

func benchCopyKeys() int {
	if s := os.Getenv("INDEXKIT_BENCH_KEYS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// queryStore opens a Pebble store in a temporary directory with the
// options examples/query gives its index: digest-prefix keys, sorted
// runs, no populations.
func queryStore(b *testing.B) store.Store {
	st, err := pebble.Open(b.TempDir(), pebble.WithDigestPrefixKeys(), pebble.WithMemTableSize(32<<20), pebble.WithSortedRuns(32<<20), pebble.WithoutPopulations())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// plainStore hides every optional capability of the store it wraps
// (range removal, seeks, bulk loads): the key-by-key baseline.
type plainStore struct{ store.Store }

// BenchmarkDrop times the drop after a join: a node that held every key
// (replication 1) gives about half of them up to a second node, in a
// Pebble store opened as examples/query opens it. "ranges" drops the
// ring segments it no longer owns by range deletions; "key-by-key", the
// baseline in the same run, reads the store and removes each key. The
// store holds INDEXKIT_BENCH_KEYS multihashes (default 1,000,000), in
// contexts of 1,000. keys/s is keys gone per second of the drop,
// including its Flush, counted by reading the store before and after.
func BenchmarkDrop(b *testing.B) {
	keys := benchCopyKeys()
	ctx := context.Background()
	const perCtx = 1000
	for _, mode := range []struct {
		name string
		wrap func(store.Store) store.Store
	}{
		{"ranges", func(st store.Store) store.Store { return st }},
		{"key-by-key", func(st store.Store) store.Store { return plainStore{st} }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var dropped int64
			var elapsed, cpu time.Duration
			for range b.N {
				b.StopTimer()
				c := cluster(b, "memory", "q1", "q2")
				q1 := c["q1"]
				st := queryStore(b)
				for i := 0; i < keys; i += perCtx {
					v := store.Value{ProviderID: provider(b, 1+i/perCtx%4), ContextID: fmt.Appendf(nil, "ctx-%d", i/perCtx), Metadata: []byte("md")}
					mhs := make([]multihash.Multihash, 0, perCtx)
					for j := i; j < min(i+perCtx, keys); j++ {
						mhs = append(mhs, mhOf(b, j))
					}
					if err := st.Put(ctx, v, mhs...); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if err := st.(*pebble.Store).Pebble().Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
					b.Fatal(err)
				}
				q1.st = mode.wrap(st)
				l1 := keyspace.Layout{Epoch: 1, Replication: 1, Nodes: nodesOf(c, "q1"), Current: []string{"q1"}, Phase: keyspace.PhaseStable}
				l2, err := l1.Join(nodesOf(c, "q2")[0])
				if err != nil {
					b.Fatal(err)
				}
				l3, _ := l2.Advance()
				l4, _ := l3.Advance()
				startNode(b, q1, l1)
				for _, l := range []keyspace.Layout{l2, l3, l4} {
					if err := q1.SetLayout(l); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start, cpu0 := time.Now(), processCPU(b)
				if code, body := postEpoch(b, q1.srv.URL+keyspace.PathDrop, l4.Epoch); code != http.StatusAccepted {
					b.Fatalf("drop: %d %s", code, body)
				}
				tk := waitTask(b, q1, l4.Epoch, dropTask)
				elapsed += time.Since(start)
				cpu += processCPU(b) - cpu0
				b.StopTimer()
				if tk.Error != "" {
					b.Fatalf("drop: %+v", tk)
				}
				left := 0
				for _, err := range st.All(ctx) {
					if err != nil {
						b.Fatal(err)
					}
					left++
				}
				if left == 0 || left == keys {
					b.Fatalf("%d of %d keys left after the drop", left, keys)
				}
				dropped += int64(keys - left)
				q1.close(b)
				b.StartTimer()
			}
			b.ReportMetric(float64(dropped)/elapsed.Seconds(), "keys/s")
			b.ReportMetric(float64(dropped)/cpu.Seconds(), "keys/cpu-s")
			b.ReportMetric(float64(dropped)/float64(b.N), "keys/op")
		})
	}
}
