package kv

// Samples: store.Sampler over the engine (see "Samples" in the package doc).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/sample"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// openSampler reads the sample hash key, drawing and storing one if the
// database has none.
func (db *DB) openSampler() error {
	var key []byte
	err := db.eng.Get(keySampler, func(v []byte) error { key = bytes.Clone(v); return nil })
	switch {
	case errors.Is(err, ErrNotFound):
		key = make([]byte, 8)
		if _, err := rand.Read(key); err != nil {
			return db.wrap("open: draw the sample key", err)
		}
		b := db.eng.NewBatch()
		defer b.Close()
		if err := b.Set(keySampler, key); err != nil {
			return db.wrap("open", err)
		}
		if err := b.Commit(); err != nil {
			return db.wrap("open", err)
		}
	case err != nil:
		return db.wrap("open: read the sample key", err)
	case len(key) != 8:
		return db.wrap("open", fmt.Errorf("%w: sample key of %d bytes", errCorrupt, len(key)))
	}
	db.hasher = sample.NewHasher(binary.BigEndian.Uint64(key))
	return nil
}

// putEntries writes the index entries of mhs for record id, in batches of
// at most db.maxBatch, and adds the multihashes of toSample that belong in
// the record's sample to it in the same batch as the last entries, so the
// sample never names a multihash whose entry is not committed. Only
// multihashes that hash below the sample's threshold cost more than a
// hash, and after the first SampleKeep of a context they are rare; when
// there are none, nothing of the sample is read or written.
func (db *DB) putEntries(ctx context.Context, mhs []multihash.Multihash, key []byte, ci ctxInfo, toSample []multihash.Multihash) error {
	var cands []sample.Item
	if ci.sampled {
		cands = sample.Candidates(db.hasher, ci.tau, toSample)
	}
	if len(cands) == 0 {
		return db.writeEntries(ctx, mhs, ci.id, false)
	}
	n := max(0, len(mhs)-db.maxBatch) // mhs[n:] is the last batch
	if err := db.writeEntries(ctx, mhs[:n], ci.id, false); err != nil {
		return err
	}
	return db.commitSampled(mhs[n:], key, ci.id, false, cands)
}

// removeEntries deletes the index entries of mhs for record id, in batches
// of at most db.maxBatch, taking the sample's members among them out of it
// in the same batch as the first deletions: the sample never names a
// multihash whose entry is gone.
func (db *DB) removeEntries(ctx context.Context, mhs []multihash.Multihash, key []byte, ci ctxInfo) error {
	var cands []sample.Item
	if ci.sampled {
		cands = sample.Below(db.hasher, ci.tau, mhs)
	}
	if len(cands) == 0 {
		return db.writeEntries(ctx, mhs, ci.id, true)
	}
	n := min(len(mhs), db.maxBatch)
	if err := db.commitSampled(mhs[:n], key, ci.id, true, cands); err != nil {
		return err
	}
	return db.writeEntries(ctx, mhs[n:], ci.id, true)
}

// commitSampled commits, in one batch, the entries of mhs for record id
// (set, or deleted with del) and the sample of id with cands added (or
// removed), and caches the sample's threshold under the context's ctxKey,
// key. It holds recMu, which serialises sample updates and orders them
// against the removal of the record: a sample removed meanwhile is not
// written back.
func (db *DB) commitSampled(mhs []multihash.Multihash, key []byte, id uint64, del bool, cands []sample.Item) error {
	db.recMu.Lock()
	defer db.recMu.Unlock()
	db.indexMu.RLock()
	defer db.indexMu.RUnlock()
	b := db.eng.NewBatch()
	defer b.Close()
	if err := db.layout.write(b, mhs, id, del); err != nil {
		return err
	}
	var set *sample.Set
	skey := sampleKey(id)
	err := db.eng.Get(skey, func(v []byte) error {
		var err error
		set, err = sample.Decode(v, db.hasher)
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		// The record is gone (or predates samples): nothing to update.
	case err != nil:
		return fmt.Errorf("read sample of record %d: %w", id, err)
	default:
		var changed bool
		if del {
			changed = set.Remove(cands)
		} else {
			changed = set.Add(cands)
		}
		if !changed {
			set = nil
		} else if err := b.Set(skey, set.Encode(nil)); err != nil {
			return err
		}
	}
	if set == nil {
		return b.Commit()
	}
	db.ctxs.begin(string(key))
	if err := b.Commit(); err != nil {
		db.ctxs.remove(string(key))
		return err
	}
	// The sample is there, so under recMu the record is live and the
	// context names it.
	db.ctxs.set(string(key), ctxInfo{id: id, tau: set.Tau, sampled: true}, ctxCost(string(key)))
	return nil
}

// Sample implements [store.Sampler].
func (db *DB) Sample(ctx context.Context, provider peer.ID, contextID []byte) ([]multihash.Multihash, error) {
	if err := db.begin(ctx, "sample"); err != nil {
		return nil, err
	}
	defer db.opMu.RUnlock()
	key := ctxKey(nil, provider, contextID)
	ci, ok, err := db.context(key)
	if err != nil {
		return nil, db.wrap("sample", err)
	}
	if !ok {
		return nil, db.wrap("sample", store.ErrNotFound)
	}
	var set *sample.Set
	err = db.eng.Get(sampleKey(ci.id), func(v []byte) error {
		var err error
		set, err = sample.Decode(v, db.hasher)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		// Removed meanwhile, or a record that predates samples?
		r, err := db.record(ci.id)
		if err != nil {
			return nil, db.wrap("sample", err)
		}
		if r == nil {
			return nil, db.wrap("sample", store.ErrNotFound)
		}
		return nil, db.wrap("sample", store.ErrNotSampled)
	}
	if err != nil {
		return nil, db.wrap("sample", err)
	}
	raw := set.Multihashes()
	out := make([]multihash.Multihash, len(raw))
	for i, mh := range raw {
		out[i] = multihash.Multihash(mh)
	}
	return out, nil
}
