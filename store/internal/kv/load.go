package kv

// Bulk loads: index entries gathered and ingested as one sorted table.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
// Commit turns them into the DB's own keys: the index entries in the DB's
// [Layout] (one merge operand per multihash key listing every gathered
// ID, or one key per entry) and, for records that keep one, the
// population entries; sorts them and ingests them as one table. The
// table's writes are newer than everything committed before, which is
// why [store.BulkLoad] tells callers what a Commit may undo.
//
// Commit holds index writes against Sweep's pruning, as every index write
// does, and holds off Sample on every population stripe while the table
// goes in, so that a sample reads a population before or after the
// table, never half of it.
type Loader struct {
	db  *DB
	ing TableIngester

	mhs  []byte      // the gathered multihashes, back to back
	ents []loadEntry // one per gathered (multihash, record)

	keys     []byte // Commit's scratch: every table key, back to back
	idx, pop []tableKey
	closed   bool
}

type loadEntry struct {
	off uint32
	n   uint16
	id  uint64
}

// tableKey is one key of a table in the keys arena; pfx is the eight key
// bytes past the prefix all the keys share, which decide most comparisons.
type tableKey struct {
	pfx uint64
	off uint32
	n   uint32
	id  uint64
}

var _ store.BulkLoad = (*Loader)(nil)

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
	return &Loader{db: db, ing: ing}, nil
}

// Put implements [store.BulkLoad].
func (l *Loader) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	db := l.db
	if l.closed {
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
	for _, mh := range mhs {
		if len(l.mhs)+len(mh) > math.MaxUint32 {
			return db.wrap("bulk load: put", errors.New("load holds 4 GiB of multihashes: commit first"))
		}
		l.ents = append(l.ents, loadEntry{off: uint32(len(l.mhs)), n: uint16(len(mh)), id: ci.id})
		l.mhs = append(l.mhs, mh...)
	}
	return nil
}

// Len implements [store.BulkLoad].
func (l *Loader) Len() int { return len(l.ents) }

// Commit implements [store.BulkLoad].
func (l *Loader) Commit(ctx context.Context) error {
	db := l.db
	if l.closed {
		return db.wrap("bulk load: commit", errors.New("load is closed"))
	}
	if len(l.ents) == 0 {
		return nil
	}
	if err := db.begin(ctx, "bulk load: commit"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	if err := l.build(); err != nil {
		return db.wrap("bulk load: commit", err)
	}
	db.indexMu.RLock()
	defer db.indexMu.RUnlock()
	for i := range db.popMu {
		db.popMu[i].mu.RLock()
	}
	err := l.ing.IngestTable(l.fill)
	for i := range db.popMu {
		db.popMu[i].gen.Add(1)
		db.popMu[i].mu.RUnlock()
	}
	if err != nil {
		return db.wrap("bulk load: commit: ingest table", err)
	}
	l.reset()
	return nil
}

// build makes and sorts the table's keys: index entries in idx,
// population entries in pop.
func (l *Loader) build() error {
	db := l.db
	l.keys, l.idx, l.pop = l.keys[:0], l.idx[:0], l.pop[:0]
	add := func(list []tableKey, start int, id uint64) ([]tableKey, error) {
		if len(l.keys) > math.MaxUint32 {
			return nil, errors.New("table keys exceed 4 GiB: commit smaller loads")
		}
		return append(list, tableKey{off: uint32(start), n: uint32(len(l.keys) - start), id: id}), nil
	}
	var err error
	for _, e := range l.ents {
		mh := l.mhs[e.off : e.off+uint32(e.n)]
		start := len(l.keys)
		switch lay := db.layout.(type) {
		case mergedLayout:
			l.keys = lay.key(l.keys, mh)
		default:
			l.keys = appendIndexKey(l.keys, mh, e.id)
		}
		if l.idx, err = add(l.idx, start, e.id); err != nil {
			return err
		}
		if e.id >= db.popFrom {
			start = len(l.keys)
			l.keys = popKey(l.keys, e.id, mh)
			if l.pop, err = add(l.pop, start, e.id); err != nil {
				return err
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { sortTableKeys(l.keys, l.pop) })
	sortTableKeys(l.keys, l.idx)
	wg.Wait()
	return nil
}

// sortTableKeys sorts ks by key, then ID.
func sortTableKeys(arena []byte, ks []tableKey) {
	if len(ks) == 0 {
		return
	}
	key := func(k tableKey) []byte { return arena[k.off : k.off+k.n] }
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
		b := key(ks[i])
		if common < len(b) {
			copy(p[:], b[common:])
		}
		ks[i].pfx = binary.BigEndian.Uint64(p[:])
	}
	slices.SortFunc(ks, func(a, b tableKey) int {
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
	})
}

// fill writes the sorted keys to w: index entries (0x01…), then
// population entries (0x06…), each key once.
func (l *Loader) fill(w TableWriter) error {
	key := func(k tableKey) []byte { return l.keys[k.off : k.off+k.n] }
	if _, merged := l.db.layout.(mergedLayout); merged {
		var op []byte
		for i := 0; i < len(l.idx); {
			k := key(l.idx[i])
			op = op[:0]
			last := uint64(math.MaxUint64)
			for ; i < len(l.idx) && bytes.Equal(key(l.idx[i]), k); i++ {
				if id := l.idx[i].id; id != last {
					op, last = appendOp(op, id, false), id
				}
			}
			if err := w.Merge(k, op); err != nil {
				return err
			}
		}
	} else if err := setEach(w, l.keys, l.idx); err != nil {
		return err
	}
	return setEach(w, l.keys, l.pop)
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

func (l *Loader) reset() {
	l.mhs, l.ents = l.mhs[:0], l.ents[:0]
	l.keys, l.idx, l.pop = l.keys[:0], l.idx[:0], l.pop[:0]
}

// Close implements [store.BulkLoad].
func (l *Loader) Close() error {
	l.closed = true
	l.mhs, l.ents, l.keys, l.idx, l.pop = nil, nil, nil, nil, nil
	return nil
}
