package pebble

import (
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/indexkit/indexkit/store/internal/kv"
)

// BenchmarkRunApply times what the applier does with a full 32 MiB run
// of random digests, one operand each (a node's ingest): its keys sorted
// and written, with their operands, into a table on disk. Beside it, in
// the same process, "write only" adds the same keys in the same order to
// a table straight from a slice: the difference is the run's own cost
// (collecting, sorting, and reading each record from the arena), in
// ns/key.
//
//	go test -run '^$' -bench BenchmarkRunApply -count 5 ./store/pebble/
func BenchmarkRunApply(b *testing.B) {
	x := benchRun(b)
	rng := rand.New(rand.NewPCG(1, 2))
	for id := uint64(1); x.add(benchRunKey(rng), benchRunOp(id)); id++ {
		// until the run is full
	}
	o := DefaultOptions()
	o.EnsureDefaults()
	wopts := o.MakeWriterOptions(0, sstable.TableFormatPebblev3)
	path := filepath.Join(b.TempDir(), "run.sst")
	write := func(b *testing.B, fill func(w *sstable.Writer) error) {
		for b.Loop() {
			f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				b.Fatal(err)
			}
			w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
			if err := fill(w); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*x.n), "ns/key")
	}
	var order []sortKey
	b.Run("run", func(b *testing.B) {
		write(b, func(w *sstable.Writer) error { return x.sorted(&order, w.Merge) })
	})
	// The same keys and operands, sorted, in a slice of their own.
	type kvPair struct{ k, v []byte }
	var pairs []kvPair
	if err := x.sorted(&order, func(k, v []byte) error {
		pairs = append(pairs, kvPair{append([]byte(nil), k...), append([]byte(nil), v...)})
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("write-only", func(b *testing.B) {
		write(b, func(w *sstable.Writer) error {
			for _, p := range pairs {
				if err := w.Merge(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// BenchmarkRunAdd times filling a 32 MiB run with random digests, one
// operand each, in batches of 4,096 as Commit hands them over: addList,
// which reads a block of slots ahead, beside adding one operand at a
// time (add), in the same process.
//
//	go test -run '^$' -bench BenchmarkRunAdd -count 5 ./store/pebble/
func BenchmarkRunAdd(b *testing.B) {
	x := benchRun(b)
	rng := rand.New(rand.NewPCG(3, 4))
	var lists []*opList
	for n := 0; n < x.max; {
		l := new(opList)
		for ; l.len() < 4096 && n < x.max; n++ {
			l.append(benchRunKey(rng), benchRunOp(uint64(n)))
		}
		lists = append(lists, l)
	}
	fill := func(b *testing.B, add func(l *opList) bool) {
		keys := 0
		for b.Loop() {
			x.reset()
			for _, l := range lists {
				if !add(l) {
					break
				}
			}
			keys += x.n
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(keys), "ns/key")
	}
	b.Run("addList", func(b *testing.B) {
		fill(b, func(l *opList) bool { return x.addList(l, 0) == l.len() })
	})
	b.Run("add", func(b *testing.B) {
		fill(b, func(l *opList) bool {
			for i := range l.len() {
				if !x.add(l.key(i), l.op(i)) {
					return false
				}
			}
			return true
		})
	})
}

// benchRun returns an empty 32 MiB run, freed when b ends.
func benchRun(b *testing.B) *run {
	x, err := newRun(32<<20, maphash.MakeSeed())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { freeArena(x.mem) })
	return x
}

// benchRunKey returns the index key of a random sha2-256 digest, kept on
// its first 20 bytes as a node keeps them.
func benchRunKey(rng *rand.Rand) []byte {
	key := []byte{kv.IndexPrefix, 0x12, 0x14}
	key = binary.BigEndian.AppendUint64(key, rng.Uint64())
	key = binary.BigEndian.AppendUint64(key, rng.Uint64())
	return binary.BigEndian.AppendUint32(key, rng.Uint32())
}

// benchRunOp returns the operand that adds the record of the n-th key's
// context, 1,000 keys to a context as in an advertisement.
func benchRunOp(n uint64) []byte { return binary.AppendUvarint([]byte{0}, n/1000) }
