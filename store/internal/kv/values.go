package kv

// Value records and their index entries: Put, Get, Remove*, UpdateMetadata.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// ensureRecord returns what the context index holds of v's (provider,
// context), whose ctxKey is key, creating the record or replacing its
// metadata as needed. With create false a missing record is an error
// wrapping store.ErrNotFound. When it writes the record, it writes the
// index entries of first in the same batch and reports wrote, so that a
// Put of a new context is one atomic commit, not two (first's population
// entries go with them).
func (db *DB) ensureRecord(key []byte, v store.Value, create bool, first []multihash.Multihash) (ci ctxInfo, wrote, created bool, err error) {
	// Without the lock, only a context in the cache: reading the engine
	// here would read it twice for a new context.
	if ci, ok, _ := db.ctxCached(key); ok {
		r, err := db.record(ci.id)
		if err != nil {
			return ctxInfo{}, false, false, err
		}
		if r != nil && bytes.Equal(r.v().Metadata, v.Metadata) {
			return ci, false, false, nil
		}
	}
	db.recMu.Lock()
	defer db.recMu.Unlock()
	ci, ok, err := db.context(key)
	if err != nil {
		return ctxInfo{}, false, false, err
	}
	var old *record
	if ok {
		if old, err = db.record(ci.id); err != nil {
			return ctxInfo{}, false, false, err
		}
		// A context-index entry without its record cannot be left by
		// this code; should one be there, the context is made anew.
	}
	if old != nil && bytes.Equal(old.v().Metadata, v.Metadata) {
		return ci, false, false, nil
	}
	if old == nil && !create {
		return ctxInfo{}, false, false, store.ErrNotFound
	}
	var r *record
	if old != nil {
		// Same provider and context: share them.
		r = newRecord(ci.id, store.Value{ProviderID: old.v().ProviderID, ContextID: old.v().ContextID, Metadata: bytes.Clone(v.Metadata)})
	} else {
		r = newRecord(db.nextID, v.Clone())
	}
	id := r.id
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(recordKey(id), encodeRecord(*r.v())); err != nil {
		return ctxInfo{}, false, false, err
	}
	if old == nil {
		if err := b.Set(keyNextID, binary.BigEndian.AppendUint64(nil, id+1)); err != nil {
			return ctxInfo{}, false, false, err
		}
		if err := b.Set(contextKey(nil, key), binary.BigEndian.AppendUint64(nil, id)); err != nil {
			return ctxInfo{}, false, false, err
		}
		ci = ctxInfo{id: id}
	}
	commit := b.Commit
	if len(first) > 0 {
		db.indexMu.RLock()
		defer db.indexMu.RUnlock()
		ordered, s := db.indexOrder(first, id)
		defer s.release()
		if err := db.writeIndex(b, ordered, id, false); err != nil {
			return ctxInfo{}, false, false, err
		}
		commit = func() error { return db.commitIndex(b, id, ordered) }
	}
	db.recs.begin(id)
	if old == nil {
		db.ctxs.begin(string(key))
	}
	if err := commit(); err != nil {
		db.recs.remove(id)
		if old == nil {
			db.ctxs.remove(string(key))
		}
		return ctxInfo{}, false, false, err
	}
	if old == nil {
		db.nextID++
		db.ctxs.set(string(key), ci, ctxCost(string(key)))
	}
	db.recs.set(id, r, r.cost())
	if old != nil {
		db.vers.recordChanged(id)
	}
	return ci, true, old == nil, nil
}

// Put implements [store.Index].
func (db *DB) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	if err := v.Validate(); err != nil {
		return db.wrap("put", err)
	}
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return db.wrap("put", err)
		}
	}
	if err := db.begin(ctx, "put"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	key := ctxKey(nil, v.ProviderID, v.ContextID)
	first := mhs[:min(len(mhs), db.maxBatch)]
	ci, wrote, _, err := db.ensureRecord(key, v, true, first)
	if err != nil {
		return db.wrap("put: write value record", err)
	}
	rest := mhs
	if wrote {
		rest = mhs[len(first):]
	}
	if err := db.writeEntries(ctx, rest, ci.id, false); err != nil {
		return db.wrap("put", err)
	}
	return nil
}

// writeEntries sets (or deletes) the index entries of mhs for id, with
// their population entries, in batches of at most db.maxBatch, each
// committed whole: the population never names a multihash whose entry is
// not there.
func (db *DB) writeEntries(ctx context.Context, mhs []multihash.Multihash, id uint64, del bool) error {
	for len(mhs) > 0 {
		n := min(len(mhs), db.maxBatch)
		if err := db.commitEntries(mhs[:n], id, del); err != nil {
			return err
		}
		mhs = mhs[n:]
		if len(mhs) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (db *DB) commitEntries(mhs []multihash.Multihash, id uint64, del bool) error {
	db.indexMu.RLock()
	defer db.indexMu.RUnlock()
	b := db.eng.NewBatch()
	defer b.Close()
	ordered, s := db.indexOrder(mhs, id)
	defer s.release()
	if err := db.writeIndex(b, ordered, id, del); err != nil {
		return err
	}
	return db.commitIndex(b, id, ordered)
}

// Get implements [store.Index].
//
// A lookup reads the record IDs of mh, then their records. A removal of
// records landing between the two could combine an index read from before
// a Put with records read after a later removal: a provider that moves a
// multihash to a new context and then removes the old one would have it
// answered with neither, an answer the store never held. So when a record
// read comes back removed and records were removed during the lookup, Get
// reads again; after getRetries tries it reads under the writers' record
// lock, which no removal passes.
func (db *DB) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
	return db.getWith(ctx, mh, nil)
}

// getWith is Get, filling v (when not nil) with the version of the answer.
func (db *DB) getWith(ctx context.Context, mh multihash.Multihash, v *getVersion) ([]store.Value, error) {
	if err := store.ValidateMultihash(mh); err != nil {
		return nil, db.wrap("get", err)
	}
	if err := db.begin(ctx, "get"); err != nil {
		return nil, err
	}
	defer db.opMu.RUnlock()
	sc := lookupPool.Get().(*lookupScratch)
	defer func() {
		if cap(sc.ids) <= 1024 {
			sc.ids = sc.ids[:0]
			lookupPool.Put(sc)
		}
	}()
	for try := 1; ; try++ {
		locked := try > getRetries
		if locked {
			db.recMu.Lock()
		}
		vals, torn, err := db.get(mh, sc, v)
		if locked {
			db.recMu.Unlock()
		}
		if err != nil {
			return nil, db.wrap("get", err)
		}
		if !torn {
			return vals, nil
		}
		sc.ids = sc.ids[:0]
	}
}

// getRetries is how many times Get reads without the record lock.
const getRetries = 3

// get is one try of Get, filling v (when not nil) with its version. torn reports that a record it read was removed
// and that records were removed while it read: its answer may mix two
// states of the store.
func (db *DB) get(mh multihash.Multihash, sc *lookupScratch, v *getVersion) (vals []store.Value, torn bool, err error) {
	removals := db.removals.Load()
	e, err := db.lookupIDs(mh, sc)
	if err != nil {
		return nil, false, err
	}
	if v != nil {
		v.entry = e
		v.capture(sc.ids)
	}
	if len(sc.ids) == 0 {
		return nil, false, nil
	}
	gone := false
	if len(sc.ids) == 1 {
		r, err := db.record(sc.ids[0])
		if err != nil {
			return nil, false, err
		}
		if r != nil {
			return r.one[:], false, nil
		}
		return nil, db.removals.Load() != removals, nil
	}
	vals = make([]store.Value, 0, len(sc.ids))
	for _, id := range sc.ids {
		r, err := db.record(id)
		if err != nil {
			return nil, false, err
		}
		if r != nil {
			vals = append(vals, *r.v())
		} else {
			gone = true
		}
	}
	return vals, gone && db.removals.Load() != removals, nil
}

// Remove implements [store.Index].
func (db *DB) Remove(ctx context.Context, provider peer.ID, contextID []byte, mhs ...multihash.Multihash) error {
	for _, mh := range mhs {
		if err := store.ValidateMultihash(mh); err != nil {
			return db.wrap("remove", err)
		}
	}
	if err := db.begin(ctx, "remove"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	key := ctxKey(nil, provider, contextID)
	ci, ok, err := db.context(key)
	if err != nil {
		return db.wrap("remove", err)
	}
	if !ok {
		return nil
	}
	if err := db.writeEntries(ctx, mhs, ci.id, true); err != nil {
		return db.wrap("remove", err)
	}
	return nil
}

// RemoveProviderContext implements [store.Index].
func (db *DB) RemoveProviderContext(ctx context.Context, provider peer.ID, contextID []byte) error {
	if err := db.begin(ctx, "remove provider context"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	db.recMu.Lock()
	defer db.recMu.Unlock()
	key := ctxKey(nil, provider, contextID)
	ci, ok, err := db.context(key)
	if err != nil {
		return db.wrap("remove provider context", err)
	}
	if !ok {
		return nil
	}
	if err := db.deleteRecords([]ctxRef{{key, ci.id}}); err != nil {
		return db.wrap("remove provider context", err)
	}
	return nil
}

// RemoveProvider implements [store.Index]. It reads the provider's
// contexts from the context index and deletes them a batch at a time,
// letting other writers of records in between: a context the provider
// gains meanwhile may or may not be removed.
func (db *DB) RemoveProvider(ctx context.Context, provider peer.ID) error {
	if err := db.begin(ctx, "remove provider"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	prefix := contextKey(nil, ctxKey(nil, provider, nil))
	prefix = prefix[:len(prefix)-1] // without the closing 0x00
	start, end := prefix, prefixEnd(prefix)
	for {
		more, err := db.removeContexts(start, end)
		if err != nil {
			return db.wrap("remove provider", err)
		}
		if more == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return db.wrap("remove provider", err)
		}
		start = more
	}
}

// removeContexts deletes the contexts of up to db.maxBatch context-index
// keys from start (below end), and returns the key to go on from, or nil
// at the end.
func (db *DB) removeContexts(start, end []byte) (more []byte, err error) {
	db.recMu.Lock()
	defer db.recMu.Unlock()
	var refs []ctxRef
	err = db.eng.Scan(start, end, func(k, v []byte) error {
		if len(refs) == db.maxBatch {
			more = bytes.Clone(k)
			return errStop
		}
		key, ok := parseContextKey(k)
		if !ok || len(v) != idLen {
			return fmt.Errorf("%w: context index entry %x", errCorrupt, k)
		}
		refs = append(refs, ctxRef{bytes.Clone(key), binary.BigEndian.Uint64(v)})
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return more, db.deleteRecords(refs)
}

// ctxRef names a context: its ctxKey and record ID.
type ctxRef struct {
	key []byte
	id  uint64
}

// deleteRecords deletes the records of refs and their context-index
// entries in one batch; the caller holds recMu. Their index and population
// entries stay until Sweep.
func (db *DB) deleteRecords(refs []ctxRef) error {
	b := db.eng.NewBatch()
	defer b.Close()
	var k []byte
	for _, c := range refs {
		if err := b.Delete(recordKey(c.id)); err != nil {
			return err
		}
		k = contextKey(k[:0], c.key)
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for _, c := range refs {
		db.ctxs.begin(string(c.key))
		db.recs.begin(c.id)
	}
	db.removals.Add(1) // before the commit: see Get
	err := b.Commit()
	for _, c := range refs {
		db.ctxs.remove(string(c.key))
		db.recs.remove(c.id)
		db.vers.recordChanged(c.id)
	}
	return err
}

// UpdateMetadata implements [store.Index].
func (db *DB) UpdateMetadata(ctx context.Context, provider peer.ID, contextID, metadata []byte) error {
	if err := store.ValidateContext(contextID, metadata); err != nil {
		return db.wrap("update metadata", err)
	}
	if err := db.begin(ctx, "update metadata"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	v := store.Value{ProviderID: provider, ContextID: contextID, Metadata: metadata}
	var kb [128]byte
	if _, _, _, err := db.ensureRecord(ctxKey(kb[:0], provider, contextID), v, false, nil); err != nil {
		return db.wrap("update metadata", err)
	}
	return nil
}
