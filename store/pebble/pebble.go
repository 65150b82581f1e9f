package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/kv"
)

// Store is a [store.Store] kept in a Pebble database.
type Store struct {
	*kv.DB
	pdb *pebble.DB
	eng *engine
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Sweeper    = (*Store)(nil)
	_ store.BulkLoader = (*Store)(nil)
)

// Open opens (creating if needed) the store in directory dir.
func Open(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, errors.New("pebble: open: empty directory")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("pebble: open: %w", err)
	}
	po, release := cfg.pebbleOptions()
	pdb, err := pebble.Open(dir, po)
	wo := po.Clone()
	release()
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	eng := &engine{db: pdb, noWAL: po.DisableWAL, free: make(chan *batch, freeBatches)}
	if err := eng.initLoads(wo, dir); err != nil {
		pdb.Close()
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	if cfg.runs > 0 {
		if eng.runs, err = newRuns(pdb, wo, dir, cfg.runs); err != nil {
			pdb.Close()
			return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
		}
	}
	if eng.noWAL || eng.runs != nil {
		eng.flusher = &flusher{flush: eng.flush}
	}
	layout := kv.Merged
	if cfg.prefix {
		layout = kv.MergedDigestPrefix
	}
	db, err := kv.Open(eng, kv.Config{Name: "pebble", Layout: layout, Reopen: []kv.Layout{kv.Merged, kv.MergedDigestPrefix}, RecordCache: recordCache(cfg.records), LookupCache: recordCache(cfg.lookups), NoPopulations: cfg.noPops})
	if err != nil {
		pdb.Close()
		return nil, err
	}
	return &Store{DB: db, pdb: pdb, eng: eng}, nil
}

// DefaultOptions returns the Pebble options Open uses when none are given:
// 64 MiB memtables and a high L0 stop threshold so that ingest does not
// stall, a 256 MiB base level, a 256 MiB block cache, and bloom filters on
// every level but the last. A fresh value is returned on every call.
func DefaultOptions() *pebble.Options {
	o := &pebble.Options{
		Merger:                      Merger,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       2,
		L0StopWritesThreshold:       1000,
		LBaseMaxBytes:               256 << 20,
		BytesPerSync:                10 << 20,
		WALBytesPerSync:             10 << 20,
		CompactionConcurrencyRange:  func() (int, int) { return 1, 2 },
	}
	o.Levels[0].BlockSize = 32 << 10
	o.Levels[0].IndexBlockSize = 256 << 10
	o.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	o.Levels[0].FilterType = pebble.TableFilter
	for i := 1; i < len(o.Levels); i++ {
		o.Levels[i] = o.Levels[0]
	}
	o.Levels[len(o.Levels)-1].FilterPolicy = nil
	return o
}

// Merger combines the record-ID lists stored under each multihash: a Put
// adds its ID to each multihash with a merge operand instead of reading and
// rewriting the list. A database written by this package must be opened with
// it; [DefaultOptions] sets it, and Open sets it on options that have none.
var Merger = &pebble.Merger{
	Name: "indexkit.store.ids.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		return kv.NewIDMerger(key, value)
	},
}

// engine adapts a pebble.DB to kv.Engine.
type engine struct {
	db    *pebble.DB
	noWAL bool
	// runs, set by WithSortedRuns, holds the index's merge operands until
	// they are applied in bulk.
	runs *runs
	// flusher, set when the database has no write-ahead log or keeps
	// sorted runs, coalesces the work that makes writes durable.
	flusher *flusher
	// loads is where bulk loads write their tables (see load.go).
	loads loadTables
	// free holds closed batches for reuse (see freeBatches).
	free chan *batch
}

// freeBatches is the most closed batches an engine keeps for reuse, each
// with its list of index operands (up to 1 MiB; larger ones are dropped).
// A sync.Pool, which every garbage collection empties, made each of a
// walk's Puts grow a new list: 18% of what an ingesting node allocated.
const freeBatches = 8

func (e *engine) NewBatch() kv.Batch {
	var b *batch
	select {
	case b = <-e.free:
	default:
		b = new(batch)
	}
	b.e, b.b = e, e.db.NewBatch()
	return b
}

// IndexOrderFree implements [kv.OrderFreeIndex]: sorted runs sort a whole
// run when they apply it, so a batch's index operands need no order.
func (e *engine) IndexOrderFree() bool { return e.runs != nil }

func isIndexKey(key []byte) bool { return len(key) > 0 && key[0] == kv.IndexPrefix }

func (e *engine) Get(key []byte, fn func(value []byte) error) error {
	if e.runs != nil && isIndexKey(key) {
		return e.getIndex(key, fn)
	}
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return kv.ErrNotFound
	}
	if err != nil {
		return err
	}
	err = fn(v)
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	return err
}

// getIndex is Get of an index key when runs hold operands that Pebble may
// not have yet: Pebble's value, then the runs' operands over it.
func (e *engine) getIndex(key []byte, fn func(value []byte) error) error {
	r := e.runs
	view := r.pin() // before Pebble: a run not in view is in Pebble already
	defer view.unpin()
	v, closer, err := e.db.Get(key)
	found := err == nil
	if err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return err
	}
	var opsBuf [4][]byte
	ops := view.opsFor(key, opsBuf[:0])
	if len(ops) == 0 {
		if !found {
			return kv.ErrNotFound
		}
		err = fn(v)
		if cerr := closer.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var m *kv.IDMerger
	if found {
		m, err = kv.NewIDMerger(nil, v)
		closer.Close() // the merger copies its operands
	} else {
		m, err = kv.NewIDMerger(nil, ops[0])
		ops = ops[1:]
	}
	if err != nil {
		return err
	}
	for _, op := range ops {
		if err := m.MergeNewer(op); err != nil {
			m.Close()
			return err
		}
	}
	// Pebble's value is the whole of what it holds, so this merge
	// includes the key's oldest value.
	out, c, err := m.Finish(true)
	if err == nil {
		err = fn(out)
	}
	c.Close()
	return err
}

func (e *engine) Scan(lower, upper []byte, fn func(key, value []byte) error) (err error) {
	if e.runs != nil && overlapsIndex(lower, upper) {
		// A scan sees only what Pebble holds: hand it every operand.
		if err := e.runs.drain(); err != nil {
			return err
		}
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

// overlapsIndex reports whether [lower, upper) holds index keys.
func overlapsIndex(lower, upper []byte) bool {
	return bytes.Compare(lower, []byte{kv.IndexPrefix + 1}) < 0 &&
		(upper == nil || bytes.Compare(upper, []byte{kv.IndexPrefix}) > 0)
}

// ScanPrefix scans the keys that start with prefix. (The merged layout this
// package uses looks multihashes up with Get; prefix scans serve only the
// other layout.)
func (e *engine) ScanPrefix(prefix []byte, fn func(key, value []byte) error) error {
	return e.Scan(prefix, prefixEnd(prefix), fn)
}

// prefixEnd returns the least key above every key that starts with p, or nil.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (e *engine) Sync() error {
	if e.flusher != nil {
		return e.flusher.do()
	}
	return e.db.LogData(nil, pebble.Sync)
}

// flush makes every committed write durable: the runs applied, then the
// memtable flushed (no write-ahead log) or the log synced.
func (e *engine) flush() error {
	if e.runs != nil {
		if err := e.runs.drain(); err != nil {
			return err
		}
	}
	if e.noWAL {
		return e.db.Flush()
	}
	return e.db.LogData(nil, pebble.Sync)
}

func (e *engine) DiskUsage() (int64, error) {
	return int64(e.db.Metrics().DiskSpaceUsage()), nil
}

func (e *engine) Close() error {
	var err error
	if e.runs != nil {
		err = e.runs.drain()
	}
	if cerr := e.db.Close(); err == nil {
		err = cerr
	}
	if e.runs != nil {
		e.runs.close()
	}
	return err
}

// batch is a kv.Batch over a Pebble batch; with sorted runs, the index's
// merge operands are kept apart in idx and handed to the runs at Commit.
type batch struct {
	e   *engine
	b   *pebble.Batch
	idx opList
	// index is set when the batch sets or deletes an index key, which
	// must not overtake operands the runs still hold.
	index bool
}

func (b *batch) Set(key, value []byte) error {
	b.index = b.index || isIndexKey(key)
	return b.b.Set(key, value, nil)
}

func (b *batch) Delete(key []byte) error {
	b.index = b.index || isIndexKey(key)
	return b.b.Delete(key, nil)
}

// DeleteRange implements [kv.RangeDeleter]. A range that reaches index
// keys drains the runs at Commit, as a point deletion does, so that no
// operand they hold lands after it.
func (b *batch) DeleteRange(start, end []byte) error {
	b.index = b.index || bytes.Compare(start, []byte{kv.IndexPrefix + 1}) < 0 && bytes.Compare(end, []byte{kv.IndexPrefix}) > 0
	return b.b.DeleteRange(start, end, nil)
}

func (b *batch) Merge(key, value []byte) error {
	if r := b.e.runs; r != nil && isIndexKey(key) {
		if r.fits(key, value) {
			b.idx.append(key, value)
			return nil
		}
		// Too large for a run: written past the runs, after them.
		b.index = true
	}
	return b.b.Merge(key, value, nil)
}

func (b *batch) Len() int { return int(b.b.Count()) + b.idx.len() }

func (b *batch) Commit() error {
	r := b.e.runs
	if r != nil && b.index {
		if err := r.drain(); err != nil {
			return err
		}
	}
	if b.b.Count() > 0 {
		if err := b.b.Commit(pebble.NoSync); err != nil {
			return err
		}
	}
	if r != nil && b.idx.len() > 0 {
		return r.add(&b.idx)
	}
	return nil
}

func (b *batch) Close() error {
	if b.b == nil {
		return nil // closed already
	}
	err := b.b.Close()
	e := b.e
	b.e, b.b, b.index = nil, nil, false
	if cap(b.idx.buf) <= 1<<20 {
		b.idx.reset()
		select {
		case e.free <- b:
		default:
		}
	}
	return err
}

// DigestPrefixKeys reports whether the store keys long cryptographic
// digests on their first 20 bytes ([WithDigestPrefixKeys]), as recorded
// when its database was created.
func (s *Store) DigestPrefixKeys() bool { return s.DB.Layout() == kv.MergedDigestPrefix }

// Pebble returns the underlying Pebble database, for what the store does not wrap
// (checkpoints, manual flushes and compactions, metrics). Writing to it
// directly bypasses the store and can corrupt the index.
func (s *Store) Pebble() *pebble.DB { return s.pdb }

// WriteBytes sums, from a Pebble database's metrics, the bytes written
// into it (its write-ahead log and the tables it ingested, the index's
// sorted runs among them) and the bytes its flushes and compactions
// wrote. rewritten / in is its write amplification; each byte that
// reaches the last level of an LSM of n levels is rewritten up to n
// times.
func WriteBytes(m *pebble.Metrics) (in, rewritten uint64) {
	in = m.WAL.BytesWritten
	for i := range m.Levels {
		l := &m.Levels[i]
		in += l.TableBytesIngested
		rewritten += l.TableBytesFlushed + l.TableBytesCompacted
	}
	return in, rewritten
}

// flusher coalesces memtable flushes: a caller needs a flush that starts
// after it arrives (one already running may have begun before its last
// write), so callers that arrive during a flush all wait for the next one,
// which the first of them to wake runs. Without it every Flush of a store
// without a WAL would write its own L0 table, however many writers
// checkpoint at once.
type flusher struct {
	flush func() error

	mu      sync.Mutex
	running *flushCall // the flush in progress, if any
	next    *flushCall // the flush that callers arriving now will share
}

type flushCall struct {
	done    chan struct{}
	started bool
	err     error
}

func (f *flusher) do() error {
	f.mu.Lock()
	if f.next == nil {
		f.next = &flushCall{done: make(chan struct{})}
	}
	c := f.next
	for !c.started && f.running != nil {
		prev := f.running
		f.mu.Unlock()
		<-prev.done
		f.mu.Lock()
	}
	if c.started {
		f.mu.Unlock()
		<-c.done
		return c.err
	}
	c.started, f.running, f.next = true, c, nil
	f.mu.Unlock()
	c.err = f.flush()
	f.mu.Lock()
	f.running = nil
	f.mu.Unlock()
	close(c.done)
	return c.err
}
