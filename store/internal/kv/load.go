package kv

// Bulk loads: index entries gathered and ingested as sorted tables.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// ErrNoTables is returned by [DB.NewLoader] when the engine cannot ingest
// tables.
var ErrNoTables = errors.New("kv: engine cannot ingest tables")

// Loader is a [store.BulkLoad] over a DB whose engine is a
// [TableIngester]. Put writes the value record at once through the same
// path as [DB.Put] (so a record is created, or its metadata replaced,
// exactly as a Put would) and keeps the multihashes with the record ID.
// A sealed [LoadTable]'s Build turns them into the DB's own keys: the
// index entries in the DB's [Layout] (one merge operand per multihash key
// listing every gathered ID, or one key per entry) and, for records that
// keep one, the population entries; sorts them and writes two tables,
// the index entries' (keys 0x01…) and the populations' (0x06…), which
// leave the records' keys between them alone, so that an ingest does not
// overlap the records a load has just written to the memtable. Ingest
// hands both to the engine at once.
//
// Ingest holds index writes against Sweep's pruning, as every index write
// does, and holds off Sample on every population stripe while the tables
// go in, so that a sample reads a population before or after them, never
// half of it.
type Loader struct {
	db  *DB
	ing TableIngester
	cur *loadBuf

	mu     sync.Mutex // guards spare and closed against tables' Close
	spare  []*loadBuf
	closed bool
}

// loadBuf is the memory of one table: gathered entries and Build's
// scratch. Tables give theirs back to the load when closed, so that a
// copy of many tables reuses two of them.
type loadBuf struct {
	mhs      []byte      // the gathered multihashes, back to back
	ents     []loadEntry // one per gathered (multihash, record)
	keys     []byte      // every table key, back to back
	idx, pop []tableKey
}

type loadEntry struct {
	off uint32
	n   uint16
	id  uint64
}

// tableKey is one key of a table in the keys arena; pfx is the eight key
// bytes past the prefix all the keys share (past the record ID for a
// population key, whose ID is hi), which decide most comparisons.
type tableKey struct {
	hi  uint64
	pfx uint64
	off uint32
	n   uint32
	id  uint64
}

var (
	_ store.BulkLoad  = (*Loader)(nil)
	_ store.BulkTable = (*LoadTable)(nil)
)

// NewLoader starts a bulk load, or returns [ErrNoTables] when the engine
// is not a [TableIngester].
func (db *DB) NewLoader(ctx context.Context) (*Loader, error) {
	if err := db.begin(ctx, "bulk load"); err != nil {
		return nil, err
	}
	defer db.opMu.RUnlock()
	ing, ok := db.eng.(TableIngester)
	if !ok {
		return nil, db.wrap("bulk load", ErrNoTables)
	}
	return &Loader{db: db, ing: ing, cur: new(loadBuf)}, nil
}

// Put implements [store.BulkLoad].
func (l *Loader) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	db := l.db
	if l.cur == nil {
		return db.wrap("bulk load: put", errors.New("load is closed"))
	}
	if err := v.Validate(); err != nil {
		return db.wrap("bulk load: put", err)
	}
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return db.wrap("bulk load: put", err)
		}
		if len(mh) > math.MaxUint16 {
			return db.wrap("bulk load: put", fmt.Errorf("%w: %d bytes", store.ErrInvalidMultihash, len(mh)))
		}
	}
	if len(mhs) == 0 {
		return nil
	}
	if err := db.begin(ctx, "bulk load: put"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	var kb [128]byte
	ci, _, _, err := db.ensureRecord(ctxKey(kb[:0], v.ProviderID, v.ContextID), v, true, nil)
	if err != nil {
		return db.wrap("bulk load: put: write value record", err)
	}
	b := l.cur
	for _, mh := range mhs {
		if len(b.mhs)+len(mh) > math.MaxUint32 {
			return db.wrap("bulk load: put", errors.New("load holds 4 GiB of multihashes: seal it first"))
		}
		b.ents = append(b.ents, loadEntry{off: uint32(len(b.mhs)), n: uint16(len(mh)), id: ci.id})
		b.mhs = append(b.mhs, mh...)
	}
	return nil
}

// Len implements [store.BulkLoad].
func (l *Loader) Len() int {
	if l.cur == nil {
		return 0
	}
	return len(l.cur.ents)
}

// Seal implements [store.BulkLoad].
func (l *Loader) Seal() store.BulkTable {
	t := &LoadTable{l: l, buf: l.cur}
	l.mu.Lock()
	if n := len(l.spare); n > 0 {
		l.cur, l.spare = l.spare[n-1], l.spare[:n-1]
	} else {
		// Sized as the table just sealed: loads seal tables of a size.
		b := t.buf
		l.cur = &loadBuf{mhs: make([]byte, 0, cap(b.mhs)), ents: make([]loadEntry, 0, cap(b.ents))}
	}
	l.mu.Unlock()
	return t
}

// Close implements [store.BulkLoad].
func (l *Loader) Close() error {
	l.mu.Lock()
	l.closed, l.spare = true, nil
	l.mu.Unlock()
	l.cur = nil
	return nil
}

// LoadTable is a sealed part of a [Loader]: a [store.BulkTable].
type LoadTable struct {
	l      *Loader
	buf    *loadBuf
	tables []Table // written by Build
	done   bool    // ingested or closed
}

// Len implements [store.BulkTable].
func (t *LoadTable) Len() int {
	if t.buf == nil {
		return 0
	}
	return len(t.buf.ents)
}

// Build implements [store.BulkTable].
func (t *LoadTable) Build(ctx context.Context) error {
	db := t.l.db
	switch {
	case t.done:
		return db.wrap("bulk load: build", errors.New("table is spent"))
	case t.tables != nil:
		return nil
	}
	if err := db.begin(ctx, "bulk load: build"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	if err := t.buf.sortKeys(db); err != nil {
		return db.wrap("bulk load: build", err)
	}
	b := t.buf
	idx, err := t.l.ing.WriteTable(func(w TableWriter) error { return b.fillIndex(db, w) })
	if err != nil {
		return db.wrap("bulk load: build", err)
	}
	pop, err := t.l.ing.WriteTable(func(w TableWriter) error { return setEach(w, b.keys, b.pop) })
	if err != nil {
		if idx != nil {
			idx.Discard()
		}
		return db.wrap("bulk load: build", err)
	}
	t.tables = make([]Table, 0, 2)
	for _, x := range []Table{idx, pop} {
		if x != nil {
			t.tables = append(t.tables, x)
		}
	}
	return nil
}

// Ingest implements [store.BulkTable].
func (t *LoadTable) Ingest(ctx context.Context) error {
	db := t.l.db
	switch {
	case t.done:
		return db.wrap("bulk load: ingest", errors.New("table is spent"))
	case t.tables == nil && t.Len() > 0:
		return db.wrap("bulk load: ingest", errors.New("table is not built"))
	}
	if err := db.begin(ctx, "bulk load: ingest"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	t.done = true
	if len(t.tables) == 0 {
		t.release()
		return nil
	}
	db.indexMu.RLock()
	for i := range db.popMu {
		db.popMu[i].mu.RLock()
	}
	db.beginIndexRewrite()
	err := t.l.ing.IngestTables(t.tables...)
	db.endIndexRewrite()
	for i := range db.popMu {
		db.popMu[i].gen.Add(1)
		db.popMu[i].mu.RUnlock()
	}
	db.indexMu.RUnlock()
	t.tables = nil
	t.release()
	if err != nil {
		return db.wrap("bulk load: ingest tables", err)
	}
	return nil
}

// Close implements [store.BulkTable].
func (t *LoadTable) Close() error {
	var err error
	for _, x := range t.tables {
		err = errors.Join(err, x.Discard())
	}
	t.tables, t.done = nil, true
	t.release()
	return err
}

// release gives the table's memory back to its load.
func (t *LoadTable) release() {
	b := t.buf
	if b == nil {
		return
	}
	t.buf = nil
	b.mhs, b.ents, b.keys, b.idx, b.pop = b.mhs[:0], b.ents[:0], b.keys[:0], b.idx[:0], b.pop[:0]
	l := t.l
	l.mu.Lock()
	if !l.closed && len(l.spare) < 2 {
		l.spare = append(l.spare, b)
	}
	l.mu.Unlock()
}

// sortKeys makes and sorts the table's keys: index entries in idx,
// population entries in pop.
func (b *loadBuf) sortKeys(db *DB) error {
	b.keys, b.idx, b.pop = b.keys[:0], b.idx[:0], b.pop[:0]
	if need := len(b.ents) * 2 * (48 + 8); cap(b.keys) < need {
		b.keys = make([]byte, 0, need)
	}
	if cap(b.idx) < len(b.ents) {
		b.idx = make([]tableKey, 0, len(b.ents))
		b.pop = make([]tableKey, 0, len(b.ents))
	}
	popSkip := 1 + idLen
	for _, e := range b.ents {
		mh := b.mhs[e.off : e.off+uint32(e.n)]
		start := len(b.keys)
		switch lay := db.layout.(type) {
		case mergedLayout:
			b.keys = lay.key(b.keys, mh)
		default:
			b.keys = appendIndexKey(b.keys, mh, e.id)
		}
		b.idx = append(b.idx, tableKey{off: uint32(start), n: uint32(len(b.keys) - start), id: e.id})
		if e.id >= db.popFrom {
			start = len(b.keys)
			b.keys = popKey(b.keys, e.id, mh)
			b.pop = append(b.pop, tableKey{hi: e.id, off: uint32(start), n: uint32(len(b.keys) - start), id: e.id})
		}
		if len(b.keys) > math.MaxUint32 {
			return errors.New("table keys exceed 4 GiB: seal smaller tables")
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { sortTableKeys(b.keys, b.pop, popSkip) })
	sortTableKeys(b.keys, b.idx, 0)
	wg.Wait()
	return nil
}

// sortTableKeys sorts ks by (hi, key, id); the first skip bytes of every
// key are decided by hi.
func sortTableKeys(arena []byte, ks []tableKey, skip int) {
	if len(ks) == 0 {
		return
	}
	key := func(k tableKey) []byte { return arena[k.off+uint32(skip) : k.off+k.n] }
	first := key(ks[0])
	common := len(first)
	for _, k := range ks[1:] {
		b := key(k)
		n := min(common, len(b))
		i := 0
		for i < n && first[i] == b[i] {
			i++
		}
		common = i
	}
	for i := range ks {
		var p [8]byte
		if b := key(ks[i]); common < len(b) {
			copy(p[:], b[common:])
		}
		ks[i].pfx = binary.BigEndian.Uint64(p[:])
	}
	cmp := func(a, b tableKey) int {
		if a.hi != b.hi {
			if a.hi < b.hi {
				return -1
			}
			return 1
		}
		if a.pfx != b.pfx {
			if a.pfx < b.pfx {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(key(a), key(b)); c != 0 {
			return c
		}
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	}
	// A copy gathers what one source exports, in key order: often sorted
	// already.
	if slices.IsSortedFunc(ks, cmp) {
		return
	}
	if !bucketSort(ks, cmp) {
		slices.SortFunc(ks, cmp)
	}
}

// bucketScratch holds the scratch arrays of bucketSort.
var bucketScratch sync.Pool

// bucketSort sorts ks, whose entries share one hi, by distributing them
// into buckets on the top bits of pfx (about one entry a bucket, since
// the bytes after the keys' common prefix are a digest's, uniform) and
// sorting each bucket with cmp, which orders by pfx first: one pass over
// the entries instead of a comparison sort's log n. It reports false,
// having done nothing, when the entries do not share one hi.
func bucketSort(ks []tableKey, cmp func(a, b tableKey) int) bool {
	n := len(ks)
	for _, k := range ks[1:] {
		if k.hi != ks[0].hi {
			return false
		}
	}
	width := min(max(bits.Len(uint(n)), 1), 16)
	shift := 64 - width
	var tmp []tableKey
	if p, ok := bucketScratch.Get().(*[]tableKey); ok && cap(*p) >= n {
		tmp = (*p)[:n]
	} else {
		tmp = make([]tableKey, n)
	}
	counts := make([]int, 1<<width+1)
	for _, k := range ks {
		counts[k.pfx>>shift+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	for _, k := range ks {
		b := k.pfx >> shift
		tmp[counts[b]] = k
		counts[b]++
	}
	copy(ks, tmp)
	bucketScratch.Put(&tmp)
	// counts[b] is now the end of bucket b.
	start := 0
	for _, end := range counts[:1<<width] {
		switch end - start {
		case 0, 1:
		case 2:
			if cmp(ks[start], ks[start+1]) > 0 {
				ks[start], ks[start+1] = ks[start+1], ks[start]
			}
		default:
			slices.SortFunc(ks[start:end], cmp)
		}
		start = end
	}
	return true
}

// fillIndex writes the sorted index entries to w, each key once.
func (b *loadBuf) fillIndex(db *DB, w TableWriter) error {
	if _, merged := db.layout.(mergedLayout); !merged {
		return setEach(w, b.keys, b.idx)
	}
	key := func(k tableKey) []byte { return b.keys[k.off : k.off+k.n] }
	var op []byte
	for i := 0; i < len(b.idx); {
		k := key(b.idx[i])
		op = op[:0]
		last := uint64(math.MaxUint64)
		for ; i < len(b.idx) && bytes.Equal(key(b.idx[i]), k); i++ {
			if id := b.idx[i].id; id != last {
				op, last = appendOp(op, id, false), id
			}
		}
		if err := w.Merge(k, op); err != nil {
			return err
		}
	}
	return nil
}

// setEach sets each distinct key of sorted ks to an empty value.
func setEach(w TableWriter, arena []byte, ks []tableKey) error {
	var prev []byte
	for i, k := range ks {
		b := arena[k.off : k.off+k.n]
		if i > 0 && bytes.Equal(b, prev) {
			continue
		}
		if err := w.Set(b, nil); err != nil {
			return err
		}
		prev = b
	}
	return nil
}
