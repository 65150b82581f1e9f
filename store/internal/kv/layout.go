package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// Layout is how index entries are kept in an engine. The layout of a database
// is recorded in it at creation, and Open refuses a different one.
type Layout byte

const (
	// Entries keeps one key per (multihash, record ID), 0x01‖mh‖0x00‖id‖0x09,
	// with an empty value. A lookup is a prefix scan. It needs nothing of
	// the engine beyond ordered keys.
	Entries Layout = 1
	// Merged keeps one key per multihash, 0x01‖mh‖0x00, whose value is a
	// list of record IDs built by the engine's merge operator from operands
	// that add or remove one ID each (see [IDMerger]). A Put never reads, and
	// a lookup is one point read. Batches must implement [MergeBatch].
	Merged Layout = 2
	// MergedDigestPrefix is Merged keyed on the digest prefix form of each
	// multihash ([store.AppendIndexKey]): 0x01‖form‖0x00, which for a
	// sha2-256 multihash is 24 bytes instead of 36. Multihashes with the
	// same form are one entry, and scans (All, Sweep) yield the form.
	MergedDigestPrefix Layout = 3
)

func (l Layout) String() string {
	switch l {
	case Entries:
		return "entries"
	case Merged:
		return "merged"
	case MergedDigestPrefix:
		return "merged-digest-prefix"
	}
	return fmt.Sprintf("layout(%d)", byte(l))
}

// Layout returns the layout of db's index.
func (db *DB) Layout() Layout {
	switch l := db.layout.(type) {
	case mergedLayout:
		if l.prefix {
			return MergedDigestPrefix
		}
		return Merged
	}
	return Entries
}

// storedLayout returns the layout recorded in eng's schema key, if any
// and of this schema version or of version 1, which had no context index.
func storedLayout(eng Engine) (Layout, bool) {
	var l Layout
	ok := false
	_ = eng.Get(keyVersion, func(v []byte) error {
		version, n := binary.Uvarint(v)
		if n > 0 && version >= 1 && version <= schemaVersion && len(v) == n+1 { // 1: before the context index, 2: before populations
			l, ok = Layout(v[n]), true
		}
		return nil
	})
	return l, ok
}

// MergeBatch is a Batch that can record merge operands.
type MergeBatch interface {
	Batch
	Merge(key, value []byte) error
}

// layout is the code behind a Layout.
type layout interface {
	// write adds (or, with del, removes) the entries of mhs for id, in
	// the order given (see DB.indexOrder).
	write(b Batch, mhs []multihash.Multihash, id uint64, del bool) error
	// lookup appends the record IDs of mh to sc.ids.
	lookup(eng Engine, mh []byte, sc *lookupScratch) error
	// lookupKey appends to dst the key that lookup reads for mh: the
	// key of mh in the lookup cache, and what every write of an entry
	// of mh invalidates there.
	lookupKey(dst, mh []byte) []byte
	// scan calls fn for each multihash from the engine key start on, with
	// all its IDs, stopping once it has seen at least limit keys and the
	// multihash changes. It returns the key to resume from, or nil at the
	// end. mh and ids are valid only during fn.
	scan(eng Engine, start []byte, limit int, fn func(mh []byte, ids []uint64)) (next []byte, err error)
	// drop removes ids from the entries of mh.
	drop(b Batch, mh []byte, ids []uint64) error
	// prune deletes what is left of mh's entries if none is live any
	// more. The caller guarantees that no other index write is in flight.
	prune(eng Engine, b Batch, mh []byte) error
}

// entriesLayout implements Entries.
type entriesLayout struct{}

func (entriesLayout) write(b Batch, mhs []multihash.Multihash, id uint64, del bool) error {
	key := make([]byte, 0, 64)
	for _, mh := range mhs {
		key = appendIndexKey(key[:0], mh, id)
		var err error
		if del {
			err = b.Delete(key)
		} else {
			err = b.Set(key, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (entriesLayout) lookupKey(dst, mh []byte) []byte { return appendIndexPrefix(dst, mh) }

func (entriesLayout) lookup(eng Engine, mh []byte, sc *lookupScratch) error {
	sc.key = appendIndexPrefix(sc.key[:0], mh)
	return eng.ScanPrefix(sc.key, sc.addKey)
}

func (entriesLayout) scan(eng Engine, start []byte, limit int, fn func(mh []byte, ids []uint64)) ([]byte, error) {
	var (
		n    int
		next []byte
		cur  []byte
		ids  []uint64
	)
	err := eng.Scan(start, []byte{prefixIndex + 1}, func(key, _ []byte) error {
		mh, id, ok := parseIndexKey(key)
		if !ok {
			return fmt.Errorf("%w: index key %x", errCorrupt, key)
		}
		if !bytes.Equal(mh, cur) {
			if cur != nil {
				fn(cur, ids)
			}
			if n >= limit {
				next = bytes.Clone(key)
				return errStop
			}
			cur, ids = append(cur[:0], mh...), ids[:0]
		}
		ids = append(ids, id)
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if next == nil && cur != nil {
		fn(cur, ids)
	}
	return next, nil
}

// prune has nothing to do: dropping an entry deletes its key.
func (entriesLayout) prune(Engine, Batch, []byte) error { return nil }

func (entriesLayout) drop(b Batch, mh []byte, ids []uint64) error {
	key := make([]byte, 0, 64)
	for _, id := range ids {
		if err := b.Delete(appendIndexKey(key[:0], mh, id)); err != nil {
			return err
		}
	}
	return nil
}

// mergedLayout implements Merged and, with prefix, MergedDigestPrefix.
type mergedLayout struct{ prefix bool }

// key appends the key of mh to dst.
func (l mergedLayout) key(dst []byte, mh []byte) []byte {
	if !l.prefix {
		return appendIndexPrefix(dst, mh)
	}
	dst = append(dst, prefixIndex)
	dst = store.AppendIndexKey(dst, mh)
	return append(dst, 0)
}

func (l mergedLayout) write(b Batch, mhs []multihash.Multihash, id uint64, del bool) error {
	mb := b.(MergeBatch)
	op := appendOp(nil, id, del)
	key := make([]byte, 0, 64)
	for _, mh := range mhs {
		if err := mb.Merge(l.key(key[:0], mh), op); err != nil {
			return err
		}
	}
	return nil
}

func (l mergedLayout) lookupKey(dst, mh []byte) []byte { return l.key(dst, mh) }

func (l mergedLayout) lookup(eng Engine, mh []byte, sc *lookupScratch) error {
	sc.key = l.key(sc.key[:0], mh)
	err := eng.Get(sc.key, sc.addList)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// lookupScratch holds what one lookup needs, pooled so that a Get does not
// allocate: the key buffer, the IDs found, and the callbacks bound once.
type lookupScratch struct {
	key     []byte
	ids     []uint64
	addKey  func(key, value []byte) error
	addList func(value []byte) error
}

var lookupPool = sync.Pool{New: func() any {
	sc := &lookupScratch{key: make([]byte, 0, 64), ids: make([]uint64, 0, 8)}
	sc.addKey = func(key, _ []byte) error {
		if _, id, ok := parseIndexKey(key); ok {
			sc.ids = append(sc.ids, id)
		}
		return nil
	}
	sc.addList = func(v []byte) error {
		var err error
		sc.ids, err = appendLiveIDs(sc.ids, v)
		return err
	}
	return sc
}}

func (mergedLayout) scan(eng Engine, start []byte, limit int, fn func(mh []byte, ids []uint64)) ([]byte, error) {
	var (
		n    int
		next []byte
		ids  []uint64
	)
	err := eng.Scan(start, []byte{prefixIndex + 1}, func(key, v []byte) error {
		if n >= limit {
			next = bytes.Clone(key)
			return errStop
		}
		if len(key) < 3 || key[len(key)-1] != 0 {
			return fmt.Errorf("%w: index key %x", errCorrupt, key)
		}
		var err error
		if ids, err = appendLiveIDs(ids[:0], v); err != nil {
			return err
		}
		fn(key[1:len(key)-1], ids) // empty lists too, for Sweep to prune
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return next, nil
}

func (l mergedLayout) drop(b Batch, mh []byte, ids []uint64) error {
	var op []byte
	for _, id := range ids {
		op = appendOp(op, id, true)
	}
	return b.(MergeBatch).Merge(l.key(nil, mh), op)
}

// prune deletes mh's key if its list has no live ID. A list emptied by
// removals stays as an empty value (see [IDMerger] for why the merge
// operator cannot delete it), so Sweep deletes it here, re-reading it while
// no merge can be in flight.
func (l mergedLayout) prune(eng Engine, b Batch, mh []byte) error {
	key := l.key(nil, mh)
	var live bool
	err := eng.Get(key, func(v []byte) error {
		ids, err := appendLiveIDs(nil, v)
		live = len(ids) > 0
		return err
	})
	if errors.Is(err, ErrNotFound) || (err == nil && live) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.Delete(key)
}

// appendOp appends one merge operation: uvarint(id<<1 | del).
func appendOp(dst []byte, id uint64, del bool) []byte {
	v := id << 1
	if del {
		v |= 1
	}
	return binary.AppendUvarint(dst, v)
}

// appendLiveIDs appends the IDs that v adds and, within v, does not remove
// again. v is a normalized list (one operation per ID) or a single operand.
func appendLiveIDs(ids []uint64, v []byte) ([]uint64, error) {
	for len(v) > 0 {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return ids, fmt.Errorf("%w: bad ID list", errCorrupt)
		}
		v = v[n:]
		if x&1 == 0 {
			ids = append(ids, x>>1)
		}
	}
	return ids, nil
}

// sortedMultihashes is a sorted copy of a batch's multihashes, pooled.
type sortedMultihashes struct{ mhs []multihash.Multihash }

var sortedPool = sync.Pool{New: func() any { return new(sortedMultihashes) }}

// sortMultihashes returns mhs in ascending byte order, which is the order
// of their index keys (multihashes are self-delimiting, so none is a
// proper prefix of another). Writing a batch in key order is what makes
// it cheap for an engine built on a skiplist: Pebble's memtable inserts
// each key starting from where the previous one went, so a sorted batch
// of 4,096 random keys descends a few levels per key instead of the whole
// list (see BenchmarkWrite in store/pebble).
func sortMultihashes(mhs []multihash.Multihash) *sortedMultihashes {
	s := sortedPool.Get().(*sortedMultihashes)
	s.mhs = append(s.mhs[:0], mhs...)
	slices.SortFunc(s.mhs, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	return s
}

// indexOrder returns the multihashes of a batch for record id in the
// order their index entries are written, and what to release after:
// as given (nothing to release) when the engine takes index writes in any
// order and id has no population entries, else a sorted copy.
func (db *DB) indexOrder(mhs []multihash.Multihash, id uint64) ([]multihash.Multihash, *sortedMultihashes) {
	if db.orderFree && id < db.popFrom {
		return mhs, nil
	}
	s := sortMultihashes(mhs)
	return s.mhs, s
}

// release returns s to the pool; a nil s is nothing to release.
func (s *sortedMultihashes) release() {
	if s == nil || cap(s.mhs) > 2*DefaultMaxBatch {
		return
	}
	clear(s.mhs)
	s.mhs = s.mhs[:0]
	sortedPool.Put(s)
}
