package kv

// Value records and their index entries: Put, Get, Remove*, UpdateMetadata.

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/sample"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// ensureRecord returns the ID of v's (provider, context), creating the record
// or replacing its metadata as needed. With create false a missing record is
// an error wrapping store.ErrNotFound. When it writes the record, it writes
// the index entries of first in the same batch and reports wrote, so that a
// Put of a new context is one atomic commit, not two; when it creates the
// record, first is in the new record's sample too.
func (db *DB) ensureRecord(v store.Value, create bool, first []multihash.Multihash) (id uint64, wrote, created bool, err error) {
	if r := db.lookup(v.ProviderID, v.ContextID); r != nil && bytes.Equal(r.v.Metadata, v.Metadata) {
		return r.id, false, false, nil
	}
	db.recMu.Lock()
	defer db.recMu.Unlock()
	old := db.lookup(v.ProviderID, v.ContextID)
	if old != nil && bytes.Equal(old.v.Metadata, v.Metadata) {
		return old.id, false, false, nil
	}
	if old == nil && !create {
		return 0, false, false, store.ErrNotFound
	}
	var r *record
	if old != nil {
		// Same provider and context: share them, and the map key.
		id = old.id
		r = newRecord(id, old.key, store.Value{ProviderID: old.v.ProviderID, ContextID: old.v.ContextID, Metadata: bytes.Clone(v.Metadata)})
	} else {
		id = db.nextID
		r = newRecord(id, "", v.Clone())
	}
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(recordKey(id), encodeRecord(r.v)); err != nil {
		return 0, false, false, err
	}
	var newSample *sample.Set
	if old == nil {
		if err := b.Set(keyNextID, binary.BigEndian.AppendUint64(nil, id+1)); err != nil {
			return 0, false, false, err
		}
		// The new context's sample, with first in it: it lands with
		// first's entries, at no extra commit.
		newSample = sample.New()
		newSample.Add(sample.Candidates(db.hasher, newSample.Tau, first))
		if err := b.Set(sampleKey(id), newSample.Encode(nil)); err != nil {
			return 0, false, false, err
		}
	}
	if len(first) > 0 {
		db.indexMu.RLock()
		defer db.indexMu.RUnlock()
		if err := db.layout.write(b, first, id, false); err != nil {
			return 0, false, false, err
		}
	}
	if err := b.Commit(); err != nil {
		return 0, false, false, err
	}
	db.mu.Lock()
	if old == nil {
		db.nextID++
		db.tau[id] = newSample.Tau
	}
	db.index(r) // replaces old, which has the same keys
	db.mu.Unlock()
	return id, true, old == nil, nil
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
	first := mhs[:min(len(mhs), db.maxBatch)]
	id, wrote, created, err := db.ensureRecord(v, true, first)
	if err != nil {
		return db.wrap("put: write value record", err)
	}
	rest, toSample := mhs, mhs
	if wrote {
		rest = mhs[len(first):]
		if created {
			toSample = rest // first is in the new context's sample
		}
	}
	if err := db.putEntries(ctx, rest, id, toSample); err != nil {
		return db.wrap("put", err)
	}
	return nil
}

// writeEntries sets (or deletes) the index entries of mhs for id, in batches
// of at most db.maxBatch.
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
	if err := db.layout.write(b, mhs, id, del); err != nil {
		return err
	}
	return b.Commit()
}

// Get implements [store.Index].
func (db *DB) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
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
	if err := db.layout.lookup(db.eng, mh, sc); err != nil {
		return nil, db.wrap("get", err)
	}
	if len(sc.ids) == 0 {
		return nil, nil
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if len(sc.ids) == 1 {
		if r := db.byID[sc.ids[0]]; r != nil {
			return r.one, nil
		}
		return nil, nil
	}
	vals := make([]store.Value, 0, len(sc.ids))
	for _, id := range sc.ids {
		if r := db.byID[id]; r != nil {
			vals = append(vals, r.v)
		}
	}
	return vals, nil
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
	r := db.lookup(provider, contextID)
	if r == nil {
		return nil
	}
	if err := db.removeEntries(ctx, mhs, r.id); err != nil {
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
	r := db.lookup(provider, contextID)
	if r == nil {
		return nil
	}
	if err := db.deleteRecords([]*record{r}); err != nil {
		return db.wrap("remove provider context", err)
	}
	return nil
}

// RemoveProvider implements [store.Index].
func (db *DB) RemoveProvider(ctx context.Context, provider peer.ID) error {
	if err := db.begin(ctx, "remove provider"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	db.recMu.Lock()
	defer db.recMu.Unlock()
	db.mu.RLock()
	recs := make([]*record, 0, len(db.byProv[provider]))
	for _, r := range db.byProv[provider] {
		recs = append(recs, r)
	}
	db.mu.RUnlock()
	for len(recs) > 0 {
		n := min(len(recs), db.maxBatch)
		if err := db.deleteRecords(recs[:n]); err != nil {
			return db.wrap("remove provider", err)
		}
		recs = recs[n:]
		if err := ctx.Err(); err != nil && len(recs) > 0 {
			return db.wrap("remove provider", err)
		}
	}
	return nil
}

// deleteRecords deletes recs in one batch; the caller holds recMu.
func (db *DB) deleteRecords(recs []*record) error {
	b := db.eng.NewBatch()
	defer b.Close()
	for _, r := range recs {
		if err := b.Delete(recordKey(r.id)); err != nil {
			return err
		}
		if err := b.Delete(sampleKey(r.id)); err != nil {
			return err
		}
	}
	if err := b.Commit(); err != nil {
		return err
	}
	db.mu.Lock()
	for _, r := range recs {
		db.unindex(r)
	}
	db.mu.Unlock()
	return nil
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
	if _, _, _, err := db.ensureRecord(store.Value{ProviderID: provider, ContextID: contextID, Metadata: metadata}, false, nil); err != nil {
		return db.wrap("update metadata", err)
	}
	return nil
}
