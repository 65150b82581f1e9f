package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/indexkit/indexkit/store/internal/kv"
)

// runsDir is the directory, inside the database's, where sorted runs are
// written before Pebble ingests them. What is left there after a crash is
// removed at Open.
const runsDir = "indexkit-runs"

// runs gathers the index's merge operands in memory and hands them to
// Pebble in bulk (see [WithSortedRuns]).
//
// Every index write goes through it, in commit order. The active run takes
// operands until its arena is full; it is then rotated into imm and
// applied, as a table Pebble ingests when it is large and as an ordinary
// batch when it is small (a Sync drains whatever is there), while the
// other arena takes new operands. A writer that fills the second arena
// while the first is still being applied waits for it: two arenas are all
// the memory runs take.
//
// A Get of an index key pins the runs as they are (a view), reads Pebble,
// then reads the key's operands in the pinned runs. A run leaves imm only
// once Pebble holds it, so a read can see a run's operands twice, in
// Pebble and in its view, but never miss them: a run that is not in the
// view was in Pebble before the read began. Applying the same operations a
// second time changes nothing: each sets or clears an ID, and nothing
// newer than the run being applied is in Pebble yet, because runs are
// applied one at a time, in order.
//
// Reads wait for nothing and take no lock. They find the runs through
// view, an immutable list of them published whenever a run is rotated or
// leaves imm, and look the active run up while writers add to it, through
// its table's slots, which a writer stores atomically once the record a
// slot points to is written (a Put of 65,536 multihashes held a lock
// shared with the reads for milliseconds, and every find waited behind
// it). The operands a read found stay where they are until it ends:
// records are only appended, and an arena is reset only once no read
// holds a view that has it. A view counts the reads that pinned it; the
// applier, after a run leaves imm, waits for every view published before
// to be unpinned before it resets the run's arena. (This was a
// read-write lock, whose writer, the applier, runs on a lowered thread
// (ingest/pace): once it asked for the lock, every find waited for it to
// be scheduled again, 2 ms on average in the slowest 1% of finds at 10M
// during ingest.)
type runs struct {
	db        *pebble.DB
	wopts     sstable.WriterOptions
	dir       string
	size      int // bytes of each arena
	recSpace  int // bytes for records in each arena
	minIngest int // arena bytes from which a run is ingested rather than committed
	seed      maphash.Seed

	view atomic.Pointer[runsView]
	mu   sync.Mutex // the fields below; writers add to the active run under it
	// retired is the views published before view, which reads may still
	// hold (see pin); the applier forgets each once it is unpinned.
	retired []*runsView
	active  *run
	imm     []*run // rotated and not yet in Pebble; at most one
	spare   *run   // the other arena, applied and released, when not in imm
	arenas  int    // arenas mapped: two at most
	err     error  // the first apply error: later index writes fail with it

	applyMu  sync.Mutex // held while applying, so that runs apply in order
	order    []sortKey  // scratch of each apply: an arena for a run's distinct keys
	orderMem []byte
	files    int // names the tables written
	// Counters for tests, under applyMu.
	ingested, committed int
}

// minRunSize is the least arena WithSortedRuns accepts: a page.
const minRunSize = 4 << 10

func newRuns(db *pebble.DB, o *pebble.Options, dir string, size int64) (*runs, error) {
	tmp := filepath.Join(dir, runsDir)
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	wo := o.Clone()
	wo.EnsureDefaults()
	r := &runs{
		db:        db,
		wopts:     wo.MakeWriterOptions(0, db.TableFormat()),
		dir:       tmp,
		size:      int(size),
		minIngest: int(size / 4),
		seed:      maphash.MakeSeed(),
	}
	var err error
	if r.active, err = newRun(r.size, r.seed); err != nil {
		return nil, err
	}
	r.arenas, r.recSpace = 1, len(r.active.rec)
	if r.orderMem, err = newArena(int(unsafe.Sizeof(sortKey{})) * r.active.max); err != nil {
		freeArena(r.active.mem)
		return nil, err
	}
	r.order = unsafe.Slice((*sortKey)(unsafe.Pointer(&r.orderMem[0])), r.active.max)[:0]
	r.publishLocked()
	return r, nil
}

// runsView is the runs a Get reads, oldest first: imm, then active.
type runsView struct {
	imm    []*run
	active *run
	pins   atomic.Int64 // reads holding the view
}

// publishLocked publishes the runs as they are now for Gets. The caller
// holds mu (or has the runs to itself).
func (r *runs) publishLocked() {
	if old := r.view.Load(); old != nil {
		r.retired = append(r.retired, old)
	}
	r.view.Store(&runsView{imm: slices.Clone(r.imm), active: r.active})
}

// pin returns the runs' current view, which keeps the arenas it names
// from being reset until unpin. A view counted after it was replaced is
// not used: the applier may have seen it unpinned already.
func (r *runs) pin() *runsView {
	for {
		v := r.view.Load()
		v.pins.Add(1)
		if r.view.Load() == v {
			return v
		}
		v.pins.Add(-1)
	}
}

func (v *runsView) unpin() { v.pins.Add(-1) }

// awaitUnpinned returns once no read holds a view published before the
// current one. A view that is unpinned once it was replaced stays so (pin
// does not use it), so each is checked until it is seen unpinned once.
// Reads hold a view for one Get, so the wait is short; only the applier
// waits, never a read.
func (r *runs) awaitUnpinned() {
	r.mu.Lock()
	views := r.retired
	r.retired = nil
	r.mu.Unlock()
	for spins := 0; ; spins++ {
		views = slices.DeleteFunc(views, func(v *runsView) bool { return v.pins.Load() == 0 })
		if len(views) == 0 {
			return
		}
		if spins < 10 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// fits reports whether an operand of key and op can go into a run at all.
func (r *runs) fits(key, op []byte) bool {
	return len(key) <= 0xffff && len(op) <= 0xffff && recordHeader+len(key)+len(op) <= r.recSpace
}

// add appends a committed batch's index operands, in order, rotating and
// applying runs as they fill. A Get may see some of the batch's operands
// before the rest (it reads the active run as operands are added), as if
// the batch had been committed in parts.
func (r *runs) add(ops *opList) error {
	for i := 0; i < ops.len(); {
		r.mu.Lock()
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			return err
		}
		i = r.active.addList(ops, i)
		if i == ops.len() {
			r.mu.Unlock()
			return nil
		}
		_, err := r.rotateLocked()
		r.mu.Unlock()
		if err != nil {
			return err
		}
		// Apply the run rotated here, or wait for the one being applied
		// to make room.
		if err := r.applyPending(); err != nil {
			return err
		}
	}
	return nil
}

// rotateLocked moves a non-empty active run to imm if imm is free, and
// reports whether it did.
func (r *runs) rotateLocked() (bool, error) {
	if r.active.ops == 0 || len(r.imm) > 0 {
		return false, nil
	}
	next := r.spare
	if next == nil {
		if r.arenas >= 2 {
			return false, nil // the other one is on its way back
		}
		var err error
		if next, err = newRun(r.size, r.seed); err != nil {
			r.err = fmt.Errorf("pebble: sorted runs: %w", err)
			return false, r.err
		}
		r.arenas++
	}
	r.imm = append(r.imm, r.active)
	r.active, r.spare = next, nil
	r.publishLocked()
	return true, nil
}

// drain applies every operand committed before it was called.
func (r *runs) drain() error {
	for {
		r.mu.Lock()
		empty := r.active.ops == 0
		rotated, err := r.rotateLocked()
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if err := r.applyPending(); err != nil {
			return err
		}
		if empty || rotated {
			return nil
		}
	}
}

// applyPending applies the rotated runs, oldest first, and returns once
// none is left (waiting for one another caller is applying).
func (r *runs) applyPending() error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	for {
		r.mu.Lock()
		err := r.err
		var x *run
		if len(r.imm) > 0 {
			x = r.imm[0]
		}
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if x == nil {
			return nil
		}
		err = r.apply(x)
		if err != nil {
			// The run stays readable in imm, but nothing more may be
			// applied after it: later runs would overtake it.
			r.mu.Lock()
			r.err = fmt.Errorf("pebble: applying a sorted run: %w", err)
			r.mu.Unlock()
			return r.err
		}
		// x leaves imm; once no read holds a view that has it, its arena
		// is reset and becomes the spare. A writer that rotates in
		// between finds no spare and waits for this apply (applyMu)
		// rather than map a third arena.
		r.mu.Lock()
		r.imm = slices.Delete(r.imm, 0, 1)
		r.publishLocked()
		r.mu.Unlock()
		r.awaitUnpinned()
		r.mu.Lock()
		x.reset()
		r.spare = x
		r.mu.Unlock()
	}
}

func (r *runs) apply(x *run) error {
	defer releaseArena(r.orderMem)
	if x.used < r.minIngest {
		b := r.db.NewBatch()
		defer b.Close()
		if err := x.sorted(&r.order, func(k, v []byte) error { return b.Merge(k, v, nil) }); err != nil {
			return err
		}
		r.committed++
		return b.Commit(pebble.NoSync)
	}
	r.files++
	path := filepath.Join(r.dir, fmt.Sprintf("%06d.sst", r.files))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), r.wopts)
	if err := x.sorted(&r.order, w.Merge); err != nil {
		w.Close()
		os.Remove(path)
		return err
	}
	if err := w.Close(); err != nil {
		os.Remove(path)
		return err
	}
	err = r.db.Ingest(context.Background(), []string{path})
	// Pebble links the table into its directory; this name is ours.
	if rerr := os.Remove(path); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	r.ingested++
	return err
}

// opsFor appends to dst the operands the runs of v hold for key, oldest
// first. The caller holds v pinned for as long as it uses them.
func (v *runsView) opsFor(key []byte, dst [][]byte) [][]byte {
	for _, x := range v.imm {
		dst = x.lookup(key, dst)
	}
	return v.active.lookup(key, dst)
}

// close releases the arenas; the runs must be drained and unused.
func (r *runs) close() {
	for _, x := range append(r.imm, r.active, r.spare) {
		if x != nil {
			freeArena(x.mem)
		}
	}
	freeArena(r.orderMem)
	r.imm, r.active, r.spare, r.order, r.orderMem = nil, nil, nil, nil, nil
}

// run is a sequence of index operands in one arena: an open-addressing
// table from each distinct key to the offset of its newest record, then
// the records, each its key and operand behind a header that links to the
// key's previous record.
//
//	record: prev uint32 (offset+1 of the key's previous record; 0: none)
//	        key length uint16, operand length uint16, key, operand
//
// A slot holds offset+1 in its low bits and, in the bits an offset does not
// need (7 of them in a 32 MiB arena), bits of the key's hash: a probe that
// passes another key's slot compares it only when those bits agree, rather
// than read that key from the arena (a cache miss for each, most of what an
// insert cost in a table three quarters full).
type run struct {
	seed    maphash.Seed
	mem     []byte   // the arena
	table   []uint32 // over mem's first eighth: hash bits | offset+1 of a key's newest record; 0: empty
	rec     []byte   // the rest of mem
	offMask uint32   // the bits of a slot that hold offset+1
	used    int      // bytes of rec written
	n       int      // distinct keys
	ops     int      // operands
	max     int      // distinct keys the table takes (three quarters full)
	touched byte     // a byte of what addList and sorted read ahead, stored so the reads stay
}

const recordHeader = 8

func newRun(size int, seed maphash.Seed) (*run, error) {
	mem, err := newArena(size)
	if err != nil {
		return nil, err
	}
	slots := 1
	for slots*2*4 <= len(mem)/8 {
		slots *= 2
	}
	rec := mem[slots*4:]
	return &run{
		seed:    seed,
		mem:     mem,
		table:   unsafe.Slice((*uint32)(unsafe.Pointer(&mem[0])), slots),
		rec:     rec,
		offMask: uint32(1<<bits.Len32(uint32(len(rec))) - 1),
		max:     slots * 3 / 4,
	}, nil
}

// slotOf returns where key's probe starts and the hash bits its slot holds.
func (x *run) slotOf(key []byte) (start uint64, tag uint32) {
	return x.slotOfHash(maphash.Bytes(x.seed, key))
}

func (x *run) slotOfHash(h uint64) (start uint64, tag uint32) {
	return h & uint64(len(x.table)-1), uint32(h>>32) &^ x.offMask
}

func (x *run) key(off uint32) []byte {
	h := x.rec[off:]
	kl := binary.LittleEndian.Uint16(h[4:])
	return h[recordHeader : recordHeader+int(kl)]
}

func (x *run) op(off uint32) []byte {
	h := x.rec[off:]
	kl, ol := binary.LittleEndian.Uint16(h[4:]), binary.LittleEndian.Uint16(h[6:])
	return h[recordHeader+int(kl) : recordHeader+int(kl)+int(ol)]
}

func (x *run) prev(off uint32) uint32 { return binary.LittleEndian.Uint32(x.rec[off:]) }

// reset empties the run and gives its arena's pages back.
func (x *run) reset() {
	releaseArena(x.mem)
	x.used, x.n, x.ops = 0, 0, 0
}

// addList adds the operands of ops from the i-th on until one does not
// fit, and returns the index of the first not added. It hashes a block
// of keys at a time and reads their slots before it adds them: the table
// is megabytes, each key's slot a cache miss that, read where the key is
// added, stalled the processor on one miss at a time (almost all of add's
// time, by profile); read in a loop of independent loads, many wait at
// once.
func (x *run) addList(ops *opList, i int) int {
	var hs [touchAhead]uint64
	for i < ops.len() {
		n := min(ops.len()-i, touchAhead)
		var touched uint32
		for k := range n {
			hs[k] = maphash.Bytes(x.seed, ops.key(i+k))
			s, _ := x.slotOfHash(hs[k])
			touched ^= x.table[s] // only writers, under runs.mu, store slots
		}
		x.touched ^= byte(touched)
		for k := range n {
			if !x.addHash(ops.key(i), ops.op(i), hs[k]) {
				return i
			}
			i++
		}
	}
	return i
}

// addHash appends an operand of a key whose hash is hash, or reports that
// the run has no room for it.
func (x *run) addHash(key, op []byte, hash uint64) bool {
	need := recordHeader + len(key) + len(op)
	if x.used+need > len(x.rec) || x.n >= x.max {
		return false
	}
	off := uint32(x.used)
	h := x.rec[x.used : x.used+need]
	binary.LittleEndian.PutUint16(h[4:], uint16(len(key)))
	binary.LittleEndian.PutUint16(h[6:], uint16(len(op)))
	copy(h[recordHeader:], key)
	copy(h[recordHeader+len(key):], op)
	x.used += need
	x.ops++
	mask := uint64(len(x.table) - 1)
	s, tag := x.slotOfHash(hash)
	for ; ; s = (s + 1) & mask {
		t := x.table[s] // only writers, under runs.mu, store slots
		if t == 0 {
			binary.LittleEndian.PutUint32(h, 0)
			atomic.StoreUint32(&x.table[s], tag|(off+1)) // after the record: see find
			x.n++
			return true
		}
		if t&^x.offMask == tag && bytes.Equal(x.key(t&x.offMask-1), key) {
			binary.LittleEndian.PutUint32(h, t&x.offMask)
			atomic.StoreUint32(&x.table[s], tag|(off+1))
			return true
		}
	}
}

// find returns the offset+1 of key's newest record, or 0. It may run
// while a writer adds to x: it loads each slot atomically, and a writer
// stores a slot only once the record it points to (and the records that
// one links to) are written, so find sees a key's records as of some
// moment during the call, never a record half written.
func (x *run) find(key []byte) uint32 {
	mask := uint64(len(x.table) - 1)
	s, tag := x.slotOf(key)
	for ; ; s = (s + 1) & mask {
		t := atomic.LoadUint32(&x.table[s])
		if t == 0 {
			return 0
		}
		if t&^x.offMask == tag && bytes.Equal(x.key(t&x.offMask-1), key) {
			return t & x.offMask
		}
	}
}

// lookup appends key's operands to dst, oldest first.
func (x *run) lookup(key []byte, dst [][]byte) [][]byte {
	t := x.find(key)
	if t == 0 {
		return dst
	}
	n := len(dst)
	for ; t != 0; t = x.prev(t - 1) {
		dst = append(dst, x.op(t-1))
	}
	slices.Reverse(dst[n:])
	return dst
}

// sortKey orders a run's distinct keys: the first eight bytes as a number
// decide almost every comparison without touching the arena.
type sortKey struct {
	pfx uint64
	rec uint32 // offset+1 of the key's newest record
}

// sorted calls fn with each distinct key in ascending order and the merge
// of its operands: one operand as is, several combined into one. order is
// scratch space, kept between calls; with the capacity of x's distinct keys
// it is not reallocated.
func (x *run) sorted(order *[]sortKey, fn func(key, value []byte) error) error {
	o := (*order)[:0]
	add := func(t uint32) {
		var p [8]byte
		copy(p[:], x.key(t-1))
		o = append(o, sortKey{binary.BigEndian.Uint64(p[:]), t})
	}
	unique := x.ops == x.n
	switch {
	case unique || x.ops < len(x.table)/8:
		// Every key once (the usual run of random digests), or few
		// operands in a large table (a Flush soon after the last
		// rotation): walk the records in the order they were written,
		// keeping each key's newest, every record when no key repeats.
		// In order, the arena is read at the speed of memory; through the
		// table, each key cost a cache miss.
		for off := 0; off < x.used; {
			h := x.rec[off:]
			kl, ol := binary.LittleEndian.Uint16(h[4:]), binary.LittleEndian.Uint16(h[6:])
			if t := uint32(off + 1); unique || x.find(h[recordHeader:recordHeader+int(kl)]) == t {
				add(t)
			}
			off += recordHeader + int(kl) + int(ol)
		}
	default:
		for _, t := range x.table {
			if t != 0 {
				add(t & x.offMask)
			}
		}
	}
	*order = o
	sortPrefixes(o, 56)
	// Keys that share their first eight bytes: by the whole key.
	for i := 0; i < len(o); {
		j := i + 1
		for j < len(o) && o[j].pfx == o[i].pfx {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(o[i:j], func(a, b sortKey) int {
				return bytes.Compare(x.key(a.rec-1), x.key(b.rec-1))
			})
		}
		i = j
	}
	var chain []uint32
	var touched byte
	for i, s := range o {
		if i%touchAhead == 0 {
			touched ^= x.touch(o[i:min(i+touchAhead, len(o))])
		}
		off := s.rec - 1
		if x.prev(off) == 0 {
			if err := fn(x.key(off), x.op(off)); err != nil {
				return err
			}
			continue
		}
		chain = chain[:0]
		for t := s.rec; t != 0; t = x.prev(t - 1) {
			chain = append(chain, t-1)
		}
		m, err := kv.NewIDMerger(nil, x.op(chain[len(chain)-1]))
		if err != nil {
			return err
		}
		for j := len(chain) - 2; j >= 0; j-- {
			if err := m.MergeNewer(x.op(chain[j])); err != nil {
				m.Close()
				return err
			}
		}
		// Not the key's oldest value: Pebble may hold older operands,
		// which the deletions here must still cancel.
		v, closer, err := m.Finish(false)
		if err == nil {
			err = fn(x.key(off), v)
		}
		closer.Close()
		if err != nil {
			return err
		}
	}
	x.touched = touched
	return nil
}

// touchAhead is how many keys addList and sorted read ahead of their
// work: their slots in the table, their records in the arena.
const touchAhead = 64

// touch reads, for each key of o, the first byte of its record and the
// byte 48 bytes on (the end of a digest key's record: both of its cache
// lines), and returns a byte of them to be kept. In key order the records lie
// at random in the arena, each a cache miss: read one at a time between
// the table writer's work, the misses came one after another (a third of
// a run's apply, by profile); read here in a loop of independent loads,
// the processor waits for many at once, and the writes then find them in
// the cache.
func (x *run) touch(o []sortKey) byte {
	var b byte
	last := x.used - 1
	for _, s := range o {
		off := int(s.rec - 1)
		b ^= x.rec[off] ^ x.rec[min(off+recordHeader+40, last)]
	}
	return b
}

// sortPrefixes sorts o by pfx in place, a most-significant-byte radix sort
// from the byte at shift (56: the first) down: the prefixes of digests are
// spread evenly, so two passes leave buckets of a few keys each, and a
// byte every key shares (a key's namespace or multihash code) costs one
// counting pass. It took a third of the time of a comparison sort of
// 750,000 keys, whose comparisons were calls through a closure.
func sortPrefixes(o []sortKey, shift int) {
	for {
		if len(o) <= 32 {
			for i := 1; i < len(o); i++ {
				for j := i; j > 0 && o[j].pfx < o[j-1].pfx; j-- {
					o[j], o[j-1] = o[j-1], o[j]
				}
			}
			return
		}
		var count [256]int
		for _, k := range o {
			count[byte(k.pfx>>shift)]++
		}
		if count[byte(o[0].pfx>>shift)] == len(o) {
			if shift == 0 {
				return
			}
			shift -= 8
			continue
		}
		var next, end [256]int
		sum := 0
		for b, c := range count {
			next[b] = sum
			sum += c
			end[b] = sum
		}
		// Each key is moved to its bucket, the one it displaces in turn
		// to that one's, until a key for the bucket being filled turns up.
		for b := range 256 {
			for next[b] < end[b] {
				k := o[next[b]]
				for d := int(byte(k.pfx >> shift)); d != b; d = int(byte(k.pfx >> shift)) {
					o[next[d]], k = k, o[next[d]]
					next[d]++
				}
				o[next[b]] = k
				next[b]++
			}
		}
		if shift == 0 {
			return
		}
		start := 0
		for _, c := range count {
			if c > 1 {
				sortPrefixes(o[start:start+c], shift-8)
			}
			start += c
		}
		return
	}
}

// opList is a batch's own index operands, in order, until Commit hands
// them to the runs.
type opList struct {
	buf  []byte
	ends []uint32 // per operand: end of its key, end of its operand
}

func (l *opList) len() int { return len(l.ends) / 2 }

func (l *opList) start(i int) uint32 {
	if i == 0 {
		return 0
	}
	return l.ends[2*i-1]
}

func (l *opList) key(i int) []byte { return l.buf[l.start(i):l.ends[2*i]] }
func (l *opList) op(i int) []byte  { return l.buf[l.ends[2*i]:l.ends[2*i+1]] }

func (l *opList) append(key, op []byte) {
	l.buf = append(l.buf, key...)
	l.ends = append(l.ends, uint32(len(l.buf)))
	l.buf = append(l.buf, op...)
	l.ends = append(l.ends, uint32(len(l.buf)))
}

func (l *opList) reset() { l.buf, l.ends = l.buf[:0], l.ends[:0] }
