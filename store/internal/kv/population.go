package kv

// Populations: store.Sampler over the engine (see "Populations" in the
// package doc).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

const (
	// popAnchorEvery is how many population entries lie between two
	// anchors of a popIndex: a sample walks at most this many keys per
	// position once the context's count is cached.
	popAnchorEvery = 1024
	// popStripes is the number of locks that order samples against the
	// writers of populations; a power of two.
	popStripes = 256
	// popCacheBudget is the bytes of memory spent on caching popIndexes.
	popCacheBudget = 4 << 20
	// popCheckEvery is how many entries a population scan reads between
	// checks of its context.
	popCheckEvery = 1 << 16
)

// popStripe orders Sample against the writers of the populations of the
// records it covers: a writer holds mu shared while its batch commits and
// bumps gen before it lets go; Sample holds mu alone, so that the count it
// reads and the positions it then looks up describe one state, and a
// popIndex cached at gen is valid while gen is unchanged.
type popStripe struct {
	mu  sync.RWMutex
	gen atomic.Uint64
	_   [40]byte
}

func (db *DB) stripe(id uint64) *popStripe {
	return &db.popMu[hashID(id)>>(64-8)]
}

// popIndex is what a scan of a population learned: its count and every
// popAnchorEvery-th multihash, from the first. It is valid while the
// stripe's gen is gen.
type popIndex struct {
	gen     uint64
	n       int
	anchors [][]byte
}

func (p *popIndex) cost() int64 {
	c := int64(64 + 24*len(p.anchors))
	for _, a := range p.anchors {
		c += int64(len(a))
	}
	return c
}

// popPrefix appends 0x06‖id, the prefix of record id's population entries.
func popPrefix(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, prefixPopulation), id)
}

// popKey appends 0x06‖id‖mh‖0x00, the population entry of mh in record
// id. Multihashes are self-delimiting, so the entries of a record sort as
// their multihashes do.
func popKey(dst []byte, id uint64, mh []byte) []byte {
	dst = popPrefix(dst, id)
	dst = append(dst, mh...)
	return append(dst, 0)
}

// popEnd returns the least key above every population entry of id.
func popEnd(id uint64) []byte {
	if id == ^uint64(0) {
		return []byte{prefixPopulation + 1}
	}
	return popPrefix(nil, id+1)
}

// parsePopKey splits a population entry into record ID and multihash.
func parsePopKey(key []byte) (id uint64, mh []byte, ok bool) {
	if len(key) < 1+idLen+2 || key[0] != prefixPopulation || key[len(key)-1] != 0 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(key[1:]), key[1+idLen : len(key)-1], true
}

// writeIndex writes to b the index entries and the population entries of
// mhs for record id, in the order indexOrder gave them (sorted whenever id
// has a population): set, or deleted with del.
// A record below popFrom predates populations and gets none.
func (db *DB) writeIndex(b Batch, mhs []multihash.Multihash, id uint64, del bool) error {
	if err := db.layout.write(b, mhs, id, del); err != nil {
		return err
	}
	if id < db.popFrom {
		return nil
	}
	key := make([]byte, 0, 64)
	for _, mh := range mhs {
		key = popKey(key[:0], id, mh)
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

// commitIndex commits b, which writeIndex filled with the entries of mhs
// for record id, in order with Sample and with the lookup cache.
func (db *DB) commitIndex(b Batch, id uint64, mhs []multihash.Multihash) error {
	st := db.stripe(id)
	st.mu.RLock()
	defer st.mu.RUnlock()
	defer st.gen.Add(1)
	defer db.endIndexWrite(db.beginIndexWrite(mhs))
	return b.Commit()
}

// Sample implements [store.Sampler].
func (db *DB) Sample(ctx context.Context, provider peer.ID, contextID []byte, pick func(n int) []int) ([]multihash.Multihash, error) {
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
	st := db.stripe(ci.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if r, err := db.record(ci.id); err != nil {
		return nil, db.wrap("sample", err)
	} else if r == nil {
		return nil, db.wrap("sample", store.ErrNotFound) // removed meanwhile
	}
	if ci.id < db.popFrom {
		return nil, db.wrap("sample", store.ErrNotSampled)
	}
	pi, err := db.popIndexOf(ctx, ci.id, st.gen.Load())
	if err != nil {
		return nil, db.wrap("sample", err)
	}
	positions := pick(pi.n)
	for _, p := range positions {
		if p < 0 || p >= pi.n {
			return nil, db.wrap("sample", fmt.Errorf("position %d picked of a population of %d", p, pi.n))
		}
	}
	out, err := db.popAt(ci.id, pi, positions)
	if err != nil {
		return nil, db.wrap("sample", err)
	}
	return out, nil
}

// popIndexOf returns the popIndex of record id at the stripe's gen, from
// the cache or else by scanning the population. The caller holds the
// stripe alone.
func (db *DB) popIndexOf(ctx context.Context, id, gen uint64) (*popIndex, error) {
	pi, ok, _ := db.pops.get(id)
	if ok && pi.gen == gen {
		return pi, nil
	}
	db.scans.Add(1)
	pi = &popIndex{gen: gen}
	err := db.eng.Scan(popPrefix(nil, id), popEnd(id), func(k, _ []byte) error {
		_, mh, ok := parsePopKey(k)
		if !ok {
			return fmt.Errorf("%w: population key %x", errCorrupt, k)
		}
		if pi.n%popAnchorEvery == 0 {
			pi.anchors = append(pi.anchors, bytes.Clone(mh))
		}
		pi.n++
		if pi.n%popCheckEvery == 0 {
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Replace what is cached, stale or not: the caller holds id's stripe
	// alone, so no other Sample of id is between.
	db.pops.begin(id)
	db.pops.set(id, pi, pi.cost())
	return pi, nil
}

// popAt returns the multihashes at positions (each in [0, pi.n)) of
// record id's population, in the order of positions. It walks from the
// anchor before each position, once for all the positions that share an
// anchor, so that it reads at most popAnchorEvery keys per position and,
// for positions that cover the population, each key once.
func (db *DB) popAt(id uint64, pi *popIndex, positions []int) ([]multihash.Multihash, error) {
	out := make([]multihash.Multihash, len(positions))
	order := make([]int, len(positions))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(positions[a], positions[b]) })
	end := popEnd(id)
	for i := 0; i < len(order); {
		anchor := positions[order[i]] / popAnchorEvery
		at := anchor * popAnchorEvery // the position of the key being read
		err := db.eng.Scan(popKey(nil, id, pi.anchors[anchor]), end, func(k, _ []byte) error {
			for i < len(order) && positions[order[i]] == at {
				_, mh, ok := parsePopKey(k)
				if !ok {
					return fmt.Errorf("%w: population key %x", errCorrupt, k)
				}
				out[order[i]] = multihash.Multihash(bytes.Clone(mh))
				i++
			}
			if i == len(order) || positions[order[i]]/popAnchorEvery != anchor {
				return errStop
			}
			at++
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
		if err == nil {
			// The stripe is held: the population cannot have shrunk.
			return nil, fmt.Errorf("%w: population of record %d ends before position %d of %d", errCorrupt, id, positions[order[i]], pi.n)
		}
	}
	return out, nil
}

// sweepPopulations deletes the population entries of records that are
// gone or below popFrom: it reads the first entry of each record's population and skips
// to the next record when the record lives, so it costs a seek per
// context plus the entries it deletes.
func (db *DB) sweepPopulations(ctx context.Context, rs *records) error {
	for lower := []byte{prefixPopulation}; lower != nil; {
		var (
			id    uint64
			found bool
		)
		err := db.scanPop(ctx, lower, func(k []byte) error {
			var ok bool
			if id, _, ok = parsePopKey(k); !ok {
				return fmt.Errorf("%w: population key %x", errCorrupt, k)
			}
			found = true
			return errStop
		})
		if err != nil || !found {
			return err
		}
		r, err := rs.get(id)
		if err != nil {
			return db.wrap("sweep", err)
		}
		// A live record below popFrom has entries from before the
		// database was opened with NoPopulations: stale, as Sample does
		// not read them.
		if r == nil || id < db.popFrom {
			if err := db.dropPopulation(ctx, id); err != nil {
				return err
			}
		}
		if id == ^uint64(0) {
			return nil
		}
		lower = popPrefix(nil, id+1)
	}
	return nil
}

// scanPop scans the population keys from lower under the close guard.
func (db *DB) scanPop(ctx context.Context, lower []byte, fn func(k []byte) error) error {
	if err := db.begin(ctx, "sweep"); err != nil {
		return err
	}
	defer db.opMu.RUnlock()
	err := db.eng.Scan(lower, []byte{prefixPopulation + 1}, func(k, _ []byte) error { return fn(k) })
	if err != nil && !errors.Is(err, errStop) {
		return db.wrap("sweep", err)
	}
	return nil
}

// dropPopulation deletes the population entries of record id, which is
// gone or below popFrom, a batch at a time.
func (db *DB) dropPopulation(ctx context.Context, id uint64) error {
	for {
		var keys [][]byte
		err := db.scanPop(ctx, popPrefix(nil, id), func(k []byte) error {
			if bytes.Compare(k, popEnd(id)) >= 0 || len(keys) == db.maxBatch {
				return errStop
			}
			keys = append(keys, bytes.Clone(k))
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = db.commit(ctx, "sweep", false, func(b Batch) error {
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// noPopFrom is popFrom in a database opened with Config.NoPopulations:
// no record has a population.
const noPopFrom = ^uint64(0)

// openPopulations reads popFrom and applies Config.NoPopulations: with it,
// popFrom becomes noPopFrom; without it, in a database last opened with
// it, the next record ID, so that the records whose populations were not
// kept stay unsampled. A change is recorded.
func (db *DB) openPopulations() error {
	err := db.eng.Get(keyPopFrom, func(v []byte) error {
		if len(v) != idLen {
			return fmt.Errorf("%w: population start of %d bytes", errCorrupt, len(v))
		}
		db.popFrom = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return db.wrap("open: read the population start", err)
	}
	want := db.popFrom
	switch {
	case db.noPops:
		want = noPopFrom
	case db.popFrom == noPopFrom:
		want = db.nextID
	}
	if want == db.popFrom {
		return nil
	}
	b := db.eng.NewBatch()
	defer b.Close()
	if err := b.Set(keyPopFrom, binary.BigEndian.AppendUint64(nil, want)); err != nil {
		return db.wrap("open", err)
	}
	if err := b.Commit(); err != nil {
		return db.wrap("open", err)
	}
	db.popFrom = want
	return nil
}

// buildPopulations brings a database of schema version 2 (or 1, once its
// context index is built), which kept a bounded sample of each context
// instead of its population, up to version 3. It deletes the samples and
// their hash key; then, if the index keeps whole multihashes (layouts
// Entries and Merged), it writes the population of every live record from
// a scan of the whole index, and returns 0, the new popFrom; if it keeps
// digest prefixes (MergedDigestPrefix), whose whole multihashes it cannot
// recover, it returns the next record ID, so that the contexts stored
// until now report store.ErrNotSampled. Every write is idempotent, so a
// build cut short is done again in full at the next Open; the caller
// records popFrom and the new version together after it.
func (db *DB) buildPopulations() (popFrom uint64, err error) {
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
	if err := b.Delete(keySampler); err != nil {
		return 0, err
	}
	err = db.eng.Scan([]byte{prefixSample}, []byte{prefixSample + 1}, func(k, _ []byte) error {
		if err := b.Delete(k); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return 0, err
	}
	if db.noPops {
		return noPopFrom, b.Commit()
	}
	if l, ok := db.layout.(mergedLayout); ok && l.prefix {
		return db.nextID, b.Commit()
	}
	rs := &records{db: db}
	var key []byte
	for start := []byte{prefixIndex}; start != nil; {
		var ferr error
		start, err = db.layout.scan(db.eng, start, scanChunk, func(mh []byte, ids []uint64) {
			for _, id := range ids {
				if ferr != nil {
					return
				}
				r, err := rs.get(id)
				if err != nil {
					ferr = err
					return
				}
				if r == nil {
					continue // swept later
				}
				key = popKey(key[:0], id, mh)
				if ferr = b.Set(key, nil); ferr == nil {
					ferr = flush()
				}
			}
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, b.Commit()
}
