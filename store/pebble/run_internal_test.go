package pebble

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/storetest"
)

// add appends one operand, or reports that the run has no room for it:
// what addList does for each of a list's, for tests that add one at a
// time.
func (x *run) add(key, op []byte) bool {
	return x.addHash(key, op, maphash.Bytes(x.seed, key))
}

// A run gives back what was added: each key's operands in order, and its
// distinct keys sorted with their operands combined, newest operation per
// ID, deletions kept (Pebble may hold older operands for them to cancel).
// The oracle is a map and a hand-written fold over the operations.
func TestRunOracle(t *testing.T) {
	// 4 MiB: the operands fill much of the table, and sorted walks it; 64
	// MiB: they are few for it, and sorted walks the records.
	// Unique: no key repeats, and sorted walks the records trusting that
	// each is its key's only one.
	// List: operands added in lists of random lengths by addList, as a
	// committed batch's are, rather than one at a time by add.
	for _, size := range []int{4 << 20, 64 << 20} {
		for _, unique := range []bool{false, true} {
			for _, list := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/unique=%v/list=%v", size, unique, list), func(t *testing.T) { testRunOracle(t, size, unique, list) })
			}
		}
	}
}

func testRunOracle(t *testing.T, size int, unique, list bool) {
	r := rand.New(rand.NewPCG(1, 2))
	x, err := newRun(size, maphash.MakeSeed())
	if err != nil {
		t.Fatal(err)
	}
	defer freeArena(x.mem)
	want := map[string][][]byte{}
	var order []string
	var ops opList
	flush := func() {
		if n := x.addList(&ops, 0); n != ops.len() {
			t.Fatalf("addList took %d of %d operands: the run is full at %d of %d bytes, %d keys", n, ops.len(), x.used, len(x.rec), x.n)
		}
		ops.reset()
	}
	for i := range 20000 {
		var key []byte
		switch {
		case !unique && i > 0 && r.IntN(4) == 0:
			key = []byte(order[r.IntN(len(order))]) // a key seen before
		case unique && i%2 == 0:
			key = binary.BigEndian.AppendUint64([]byte{'i'}, r.Uint64()) // a digest behind a shared byte
			key = binary.BigEndian.AppendUint64(key, r.Uint64())
		default:
			key = make([]byte, 1+r.IntN(40))
			for j := range key {
				key[j] = byte(r.IntN(4)) // short alphabet: long shared prefixes
			}
		}
		if _, ok := want[string(key)]; ok && unique {
			continue
		}
		op := binary.AppendUvarint(nil, uint64(r.IntN(50))<<1|uint64(r.IntN(2)))
		if _, ok := want[string(key)]; !ok {
			order = append(order, string(key))
		}
		want[string(key)] = append(want[string(key)], op)
		if list {
			if ops.append(key, op); r.IntN(100) == 0 {
				flush()
			}
			continue
		}
		if !x.add(key, op) {
			t.Fatalf("operand %d: the run is full at %d of %d bytes, %d keys", i, x.used, len(x.rec), x.n)
		}
	}
	flush()
	for k, ops := range want {
		if got := x.lookup([]byte(k), nil); !slices.EqualFunc(got, ops, bytes.Equal) {
			t.Fatalf("lookup %x = %x, want %x", k, got, ops)
		}
	}
	if got := x.lookup([]byte("absent key"), nil); len(got) != 0 {
		t.Fatalf("lookup of an absent key = %x", got)
	}
	slices.Sort(order)
	var seen []string
	var scratch []sortKey
	err = x.sorted(&scratch, func(k, v []byte) error {
		seen = append(seen, string(k))
		if want := fold(want[string(k)]); !bytes.Equal(v, want) {
			return fmt.Errorf("key %x: value %x, want %x", k, v, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, order) {
		t.Fatalf("sorted yielded %d keys, want the %d distinct keys in order", len(seen), len(order))
	}
	x.reset()
	if x.find([]byte(order[0])) != 0 || len(x.lookup([]byte(order[0]), nil)) != 0 || slices.ContainsFunc(x.table, func(t uint32) bool { return t != 0 }) {
		t.Fatal("reset left operands behind")
	}
	if size > 4<<20 || unique {
		return
	}
	// Full: it says so rather than overwrite.
	n := 0
	if list {
		for {
			ops.reset()
			for j := range 100 {
				ops.append(binary.AppendUvarint([]byte("fill"), uint64(n+j)), []byte{2})
			}
			k := x.addList(&ops, 0)
			if n += k; k < ops.len() {
				break
			}
		}
		if got := x.lookup(binary.AppendUvarint([]byte("fill"), uint64(n)), nil); len(got) != 0 {
			t.Fatalf("the first operand addList did not take is in the run: %x", got)
		}
	}
	for !list && x.add(binary.AppendUvarint([]byte("fill"), uint64(n)), []byte{2}) {
		n++
	}
	if n == 0 || x.n < x.max && x.used+recordHeader+len("fill")+3 <= len(x.rec) {
		t.Fatalf("the run refused an operand after %d with room left: %d of %d bytes, %d of %d keys", n, x.used, len(x.rec), x.n, x.max)
	}
	if got := x.lookup(binary.AppendUvarint([]byte("fill"), uint64(n-1)), nil); len(got) != 1 {
		t.Fatalf("the last operand that fitted: lookup = %x", got)
	}
}

// sortPrefixes orders any prefixes as a comparison sort does: random ones,
// ones sharing leading bytes, few distinct values, and the sizes around
// its switch to insertion sort.
func TestSortPrefixes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func() uint64{
		"random":      r.Uint64,
		"shared head": func() uint64 { return 0x6912200000000000 | r.Uint64()>>24 },
		"few values":  func() uint64 { return uint64(r.IntN(5)) << 40 },
		"low bytes":   func() uint64 { return uint64(r.IntN(1000)) },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 31, 32, 33, 300, 100000} {
			o := make([]sortKey, n)
			for i := range o {
				o[i] = sortKey{pfx: gen(), rec: uint32(i)}
			}
			want := slices.Clone(o)
			slices.SortStableFunc(want, func(a, b sortKey) int { return cmp.Compare(a.pfx, b.pfx) })
			sortPrefixes(o, 56)
			if !slices.EqualFunc(o, want, func(a, b sortKey) bool { return a.pfx == b.pfx }) {
				t.Fatalf("%s, %d keys: not in order", name, n)
			}
			// A permutation: every record once.
			seen := make([]bool, n)
			for _, k := range o {
				if seen[k.rec] {
					t.Fatalf("%s, %d keys: record %d twice", name, n, k.rec)
				}
				seen[k.rec] = true
			}
		}
	}
}

// fold is the oracle's merge of single-operation operands: one operand as
// is; several to the newest operation per ID, by ascending ID.
func fold(ops [][]byte) []byte {
	if len(ops) == 1 {
		return ops[0]
	}
	last := map[uint64]uint64{}
	for _, op := range ops {
		x, _ := binary.Uvarint(op)
		last[x>>1] = x
	}
	var out []byte
	for _, id := range slices.Sorted(func(yield func(uint64) bool) {
		for id := range last {
			if !yield(id) {
				return
			}
		}
	}) {
		out = binary.AppendUvarint(out, last[id])
	}
	return out
}

// A reader never misses a write whose Put has returned, nor sees one whose
// removal has returned, while runs are rotated, ingested and committed
// under it: the run being applied stays readable until Pebble holds it.
func TestRunsReadsNeverMiss(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), WithSortedRuns(16<<10), WithCacheSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const puts, lag = 300, 5
	value := func(i int) store.Value {
		return store.Value{ProviderID: storetest.PeerID("p"), ContextID: fmt.Appendf(nil, "ctx-%d", i), Metadata: []byte("md")}
	}
	var done atomic.Int64 // Puts (and their removals) that have returned
	done.Store(-1)
	var wg sync.WaitGroup
	var fail atomic.Value
	wg.Go(func() {
		for i := range puts {
			if err := s.Put(ctx, value(i), storetest.Multihashes(fmt.Sprint("never-miss-", i), 40)...); err != nil {
				fail.Store(err.Error())
				return
			}
			if i >= lag {
				gone := storetest.Multihashes(fmt.Sprint("never-miss-", i-lag), 1)
				if err := s.Remove(ctx, value(i-lag).ProviderID, value(i-lag).ContextID, gone...); err != nil {
					fail.Store(err.Error())
					return
				}
			}
			if i%3 == 0 {
				if err := s.Flush(ctx); err != nil {
					fail.Store(err.Error())
					return
				}
			}
			done.Store(int64(i))
		}
	})
	r := rand.New(rand.NewPCG(3, 4))
	reads := 0
	for done.Load() < puts-1 && fail.Load() == nil {
		d := int(done.Load())
		if d < 0 {
			continue
		}
		i := r.IntN(d + 1)
		mh := storetest.Multihashes(fmt.Sprint("never-miss-", i), 40)
		got, err := s.Get(ctx, mh[1+r.IntN(39)])
		if err != nil || len(got) != 1 || !got[0].Equal(value(i)) {
			t.Fatalf("Put %d of %d returned: Get = %v, %v; want [%v]", i, d, got, err, value(i))
		}
		if i <= d-lag {
			got, err := s.Get(ctx, mh[0])
			if err != nil || len(got) != 0 {
				t.Fatalf("Put %d removed its first multihash after Put %d returned: Get = %v, %v; want nothing", i, d, got, err)
			}
		}
		reads++
	}
	wg.Wait()
	if f := fail.Load(); f != nil {
		t.Fatal(f)
	}
	runs := s.eng.runs
	runs.applyMu.Lock()
	ingested, committed := runs.ingested, runs.committed
	runs.applyMu.Unlock()
	t.Logf("%d reads; runs: %d ingested, %d committed", reads, ingested, committed)
	if ingested == 0 || committed == 0 {
		t.Fatalf("runs: %d ingested, %d committed; the test must reach both", ingested, committed)
	}
}

// Writers that fill runs at once, one of them Flushing as a checkpoint
// does, keep going on two arenas, no more: each applied run comes back as
// the spare that the next rotation takes (a run that never came back
// would leave them waiting for good). Under -race it also checks that
// nothing reads the runs' state unlocked while a Flush rotates them.
func TestRunsTwoArenas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), WithSortedRuns(256<<10), WithCacheSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 150 {
				v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: fmt.Appendf(nil, "w%d-%d", w, i), Metadata: []byte("md")}
				if err := s.Put(ctx, v, storetest.Multihashes(fmt.Sprint("two-arenas-", w, "-", i), 200)...); err != nil {
					t.Error(err)
					return
				}
				if w == 0 && i%5 == 0 {
					// A checkpoint: drains the runs while the others write.
					if err := s.Flush(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	r := s.eng.runs
	r.mu.Lock()
	arenas := r.arenas
	r.mu.Unlock()
	r.applyMu.Lock()
	ingested := r.ingested
	r.applyMu.Unlock()
	if arenas > 2 || ingested < 10 {
		t.Fatalf("4 writers, %d runs ingested: %d arenas mapped, want at most 2", ingested, arenas)
	}
}

// A run is looked up while a writer adds to it, with nothing ordering
// the two but the run's own atomic table slots: every lookup sees a key's
// operands as of some moment, oldest first, never a record half written.
// (A plain load of a slot passes this too, on amd64 and under the race
// detector, which did not report it beside the writer's atomic store:
// the atomics are there for the memory model, not for a test.)
func TestRunLookupWhileAdding(t *testing.T) {
	x, err := newRun(4<<20, maphash.MakeSeed())
	if err != nil {
		t.Fatal(err)
	}
	defer freeArena(x.mem)
	const keys, rounds = 64, 2000
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%02d", i) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range rounds {
			for i := range keys {
				if !x.add(key(i), binary.AppendUvarint(nil, uint64(r))) {
					t.Error("the run is full")
					return
				}
			}
			runtime.Gosched() // let the reader in between rounds too
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		for i := range keys {
			ops := x.lookup(key(i), nil)
			for r, op := range ops {
				if v, n := binary.Uvarint(op); n != len(op) || v != uint64(r) {
					t.Fatalf("key %d: operand %d of %d reads %x, want round %d", i, r, len(ops), op, r)
				}
			}
		}
	}
	if ops := x.lookup(key(0), nil); len(ops) != rounds {
		t.Fatalf("key 0: %d operands after the writer, want %d", len(ops), rounds)
	}
}
