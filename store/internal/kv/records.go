package kv

// Value records on disk and the caches over them: a record by its ID, a
// (provider, context) by its context-index key.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// DefaultRecordCache is the bytes of memory a DB spends on caching value
// records and context-index entries unless [Config.RecordCache] says
// otherwise: some hundred thousand records of typical size.
const DefaultRecordCache = 32 << 20

// prefixContext begins a context-index key: 0x05‖ctxKey‖0x00, holding the
// record ID (8 bytes, big-endian) of that (provider, context).
const prefixContext = 0x05

// record is one value record; it is replaced, never changed, so readers may
// keep its slices.
type record struct {
	id  uint64
	one [1]store.Value // the value; one[:] is what Get returns for it alone
}

func (r *record) v() *store.Value { return &r.one[0] }

// cost is what the record cache charges for r: its bytes and an estimate of
// the overhead of the entry, the map slot and the record itself.
func (r *record) cost() int64 {
	if r == nil {
		return 96
	}
	return 256 + int64(len(r.one[0].ContextID)+len(r.one[0].Metadata))
}

// newRecord makes the record of v, which it keeps.
func newRecord(id uint64, v store.Value) *record {
	return &record{id: id, one: [1]store.Value{v}}
}

// ctxInfo is what the context cache holds for a (provider, context): its
// record ID.
type ctxInfo struct {
	id uint64
}

// ctxCost is what the context cache charges for an entry of key.
func ctxCost(key string) int64 { return 128 + int64(len(key)) }

// ctxKey is the key of a (provider, context): a length-prefixed provider
// followed by the context ID. Every key of one provider begins with
// ctxKey(p, nil).
func ctxKey(dst []byte, p peer.ID, contextID []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	dst = append(dst, p...)
	return append(dst, contextID...)
}

// contextKey appends the context-index key of the ctxKey k. The closing
// 0x00 keeps it from ending in '/' whatever the context ID.
func contextKey(dst, k []byte) []byte {
	dst = append(dst, prefixContext)
	dst = append(dst, k...)
	return append(dst, 0)
}

// parseContextKey returns the ctxKey in a context-index key.
func parseContextKey(key []byte) ([]byte, bool) {
	if len(key) < 3 || key[0] != prefixContext || key[len(key)-1] != 0 {
		return nil, false
	}
	return key[1 : len(key)-1], true
}

// prefixEnd returns the least key above every key that starts with p, or
// nil if there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

var hashSeed = maphash.MakeSeed()

func hashID(id uint64) uint64 { return id * 0x9e3779b97f4a7c15 }

func hashString(s string) uint64 { return maphash.String(hashSeed, s) }

func hashBytes(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }

// ctxCached returns the context of ctxKey k if the cache holds it.
func (db *DB) ctxCached(k []byte) (ctxInfo, bool, uint64) {
	return getBytes(db.ctxs, k, hashBytes)
}

// newCaches sizes the record and context caches to budget bytes in all:
// three quarters for records, which every Get reads, and the rest for the
// context index, which Put, Remove and UpdateMetadata read.
func (db *DB) newCaches(budget int64) {
	db.recs = newCache[uint64, *record](budget-budget/4, hashID)
	db.ctxs = newCache[string, ctxInfo](budget/4, hashString)
	db.pops = newCache[uint64, *popIndex](popCacheBudget, hashID)
}

// record returns record id, nil if there is none, from the cache or else
// from the engine, caching it.
func (db *DB) record(id uint64) (*record, error) {
	r, ok, epoch := db.recs.get(id)
	if ok {
		return r, nil
	}
	r, err := db.loadRecord(id)
	if err != nil {
		return nil, err
	}
	db.recs.fill(id, r, r.cost(), epoch)
	return r, nil
}

// loadRecord reads record id from the engine; it returns nil if there is
// none.
func (db *DB) loadRecord(id uint64) (*record, error) {
	var r *record
	err := db.eng.Get(recordKey(id), func(val []byte) error {
		p, rest, err := readField(val)
		if err != nil {
			return fmt.Errorf("record %d: %w", id, err)
		}
		c, md, err := readField(rest)
		if err != nil {
			return fmt.Errorf("record %d: %w", id, err)
		}
		// One allocation for the context ID and metadata, and the
		// provider shared with the other records of that provider.
		buf := make([]byte, len(c)+len(md))
		n := copy(buf, c)
		copy(buf[n:], md)
		v := store.Value{ProviderID: db.peers.intern(p), ContextID: buf[:n:n]}
		if len(md) > 0 {
			v.Metadata = buf[n:]
		}
		r = newRecord(id, v)
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return r, err
}

// records is a scan's view of the records: what the cache holds, else the
// engine, remembered for the scan but not cached, so that a scan of the
// whole index does not evict what Get uses.
type records struct {
	db   *DB
	seen map[uint64]*record
}

func (rs *records) get(id uint64) (*record, error) {
	if r, ok := rs.seen[id]; ok {
		return r, nil
	}
	r, ok, _ := rs.db.recs.get(id)
	if !ok {
		var err error
		if r, err = rs.db.loadRecord(id); err != nil {
			return nil, err
		}
	}
	if rs.seen == nil || len(rs.seen) >= 4*scanChunk {
		rs.seen = make(map[uint64]*record)
	}
	rs.seen[id] = r
	return r, nil
}

// values returns the values of the records ids name, skipping those
// gone. With share, a single value is the record's own slice, shared with
// the cache as Get returns it (not to be modified); otherwise the slice
// is the caller's.
func (rs *records) values(ids []uint64, share bool) ([]store.Value, error) {
	if share && len(ids) == 1 {
		r, err := rs.get(ids[0])
		if r == nil || err != nil {
			return nil, err
		}
		return r.one[:], nil
	}
	var vals []store.Value
	for _, id := range ids {
		r, err := rs.get(id)
		if err != nil {
			return nil, err
		}
		if r != nil {
			vals = append(vals, *r.v())
		}
	}
	return vals, nil
}

// context returns the record ID of the (provider, context) of ctxKey k,
// from the cache or else from the engine, caching it.
func (db *DB) context(k []byte) (ctxInfo, bool, error) {
	ci, ok, epoch := db.ctxCached(k)
	if ok {
		return ci, true, nil
	}
	var found bool
	err := db.eng.Get(contextKey(nil, k), func(v []byte) error {
		if len(v) != idLen {
			return fmt.Errorf("%w: context index entry of %d bytes", errCorrupt, len(v))
		}
		ci.id, found = binary.BigEndian.Uint64(v), true
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return ctxInfo{}, false, nil
	}
	if err != nil {
		return ctxInfo{}, false, err
	}
	db.ctxs.fill(string(k), ci, ctxCost(string(k)), epoch)
	return ci, found, nil
}

// interner shares the provider IDs of records loaded from the engine: a
// node has few providers and many records of each.
type interner struct {
	mu sync.RWMutex
	m  map[string]peer.ID
}

// maxInterned bounds the interner: past it, IDs are no longer shared.
const maxInterned = 1 << 14

// intern returns the provider ID of the bytes p, which it does not keep.
func (in *interner) intern(p []byte) peer.ID {
	in.mu.RLock()
	q, ok := in.m[string(p)]
	in.mu.RUnlock()
	if ok {
		return q
	}
	q = peer.ID(p)
	in.mu.Lock()
	if in.m == nil {
		in.m = make(map[string]peer.ID)
	}
	if len(in.m) < maxInterned {
		in.m[string(q)] = q
	}
	in.mu.Unlock()
	return q
}

// buildContextIndex writes the context index of a database written before
// there was one (schema version 1): an entry for each value record. It
// first deletes any entries already there, which a build cut short by a
// crash may have left (and an older version, opening the database
// meanwhile, may have made stale), so that running it again always ends
// in the same index. The caller records the new schema version after it.
func (db *DB) buildContextIndex() error {
	b := db.eng.NewBatch()
	defer func() { b.Close() }()
	flush := func() error {
		if b.Len() < db.maxBatch {
			return nil
		}
		if err := b.Commit(); err != nil {
			return err
		}
		b.Close()
		b = db.eng.NewBatch()
		return nil
	}
	err := db.eng.Scan([]byte{prefixContext}, []byte{prefixContext + 1}, func(key, _ []byte) error {
		if err := b.Delete(key); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return err
	}
	var kbuf, ck []byte
	err = db.eng.Scan([]byte{prefixRecord}, []byte{prefixRecord + 1}, func(key, val []byte) error {
		if len(key) != 1+idLen+1 {
			return fmt.Errorf("%w: record key of %d bytes", errCorrupt, len(key))
		}
		v, err := decodeRecord(val)
		if err != nil {
			return err
		}
		ck = ctxKey(ck[:0], v.ProviderID, v.ContextID)
		kbuf = contextKey(kbuf[:0], ck)
		if err := b.Set(kbuf, key[1:1+idLen]); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return err
	}
	return b.Commit()
}
