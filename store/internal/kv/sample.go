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
// database has none, and loads the threshold of every sample. It runs in
// Open, before the records are loaded.
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
	err = db.eng.Scan([]byte{prefixSample}, []byte{prefixSample + 1}, func(k, v []byte) error {
		if len(k) != 1+idLen+1 {
			return fmt.Errorf("%w: sample key of %d bytes", errCorrupt, len(k))
		}
		tau, err := sample.Tau(v)
		if err != nil {
			return fmt.Errorf("%w: sample %x", errCorrupt, k)
		}
		db.tau[binary.BigEndian.Uint64(k[1:])] = tau
		return nil
	})
	if err != nil {
		return db.wrap("open: load sample thresholds", err)
	}
	return nil
}

// sampleTau returns the sample threshold of record id, and false if it has
// no sample.
func (db *DB) sampleTau(id uint64) (uint64, bool) {
	db.mu.RLock()
	tau, ok := db.tau[id]
	db.mu.RUnlock()
	return tau, ok
}

// updateSample adds mhs to (or, with del, removes them from) the sample of
// record id. It reads and rewrites the sample only if a multihash hashes
// below its threshold, which after the first SampleKeep multihashes of a
// context is rare.
func (db *DB) updateSample(id uint64, mhs []multihash.Multihash, del bool) error {
	tau, ok := db.sampleTau(id)
	if !ok {
		return nil // a record from before samples, or removed meanwhile
	}
	var cands []sample.Item // hashed outside the lock
	if del {
		cands = sample.Below(db.hasher, tau, mhs)
	} else {
		cands = sample.Candidates(db.hasher, tau, mhs)
	}
	if len(cands) == 0 {
		return nil
	}
	db.recMu.Lock()
	defer db.recMu.Unlock()
	if _, ok := db.sampleTau(id); !ok {
		return nil // removed since: do not bring its sample key back
	}
	key := sampleKey(id)
	var set *sample.Set
	err := db.eng.Get(key, func(v []byte) error {
		var err error
		set, err = sample.Decode(v, db.hasher)
		return err
	})
	if err != nil {
		return fmt.Errorf("read sample of record %d: %w", id, err)
	}
	var changed bool
	if del {
		changed = set.Remove(cands)
	} else {
		changed = set.Add(cands)
	}
	if !changed {
		return nil
	}
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(key, set.Encode(nil)); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	db.mu.Lock()
	if _, ok := db.tau[id]; ok {
		db.tau[id] = set.Tau
	}
	db.mu.Unlock()
	return nil
}

// Sample implements [store.Sampler].
func (db *DB) Sample(ctx context.Context, provider peer.ID, contextID []byte) ([]multihash.Multihash, error) {
	if err := db.begin(ctx, "sample"); err != nil {
		return nil, err
	}
	defer db.opMu.RUnlock()
	r := db.lookup(provider, contextID)
	if r == nil {
		return nil, db.wrap("sample", store.ErrNotFound)
	}
	var set *sample.Set
	err := db.eng.Get(sampleKey(r.id), func(v []byte) error {
		var err error
		set, err = sample.Decode(v, db.hasher)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		if db.lookup(provider, contextID) == nil {
			return nil, db.wrap("sample", store.ErrNotFound) // removed meanwhile
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
