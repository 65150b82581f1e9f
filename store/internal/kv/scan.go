package kv

// Whole-index scans: All and Sweep.

import (
	"bytes"
	"context"
	"iter"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// scanIndex reads about scanChunk index keys from start, calling fn with
// each multihash and its record IDs, and returns where the next chunk starts
// (nil at the end). It releases the engine before returning.
func (db *DB) scanIndex(ctx context.Context, op string, start []byte, fn func(mh []byte, ids []uint64)) ([]byte, error) {
	if err := db.begin(ctx, op); err != nil {
		return nil, err
	}
	defer db.opMu.RUnlock()
	next, err := db.layout.scan(db.eng, start, scanChunk, fn)
	if err != nil {
		return nil, db.wrap(op, err)
	}
	return next, nil
}

// All implements [store.Store]. It reads the index in chunks and holds no
// engine resources while it yields, so the loop body may call the store.
func (db *DB) All(ctx context.Context) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		rs := &records{db: db}
		for start := []byte{prefixIndex}; start != nil; {
			var (
				entries []store.Entry
				rerr    error
			)
			next, err := db.scanIndex(ctx, "iterate", start, func(mh []byte, ids []uint64) {
				if rerr != nil {
					return
				}
				vals, err := rs.values(ids, false)
				if err != nil {
					rerr = err
					return
				}
				if len(vals) > 0 {
					entries = append(entries, store.Entry{Multihash: multihash.Multihash(bytes.Clone(mh)), Values: vals})
				}
			})
			if err == nil && rerr != nil {
				err = db.wrap("iterate", rerr)
			}
			if err != nil {
				yield(store.Entry{}, err)
				return
			}
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
			start = next
		}
	}
}

// Sweep implements [store.Sweeper].
func (db *DB) Sweep(ctx context.Context) (int64, error) {
	var removed int64
	type deadEntries struct {
		mh  []byte
		ids []uint64
	}
	rs := &records{db: db}
	for start := []byte{prefixIndex}; start != nil; {
		var (
			dead  []deadEntries
			empty [][]byte // multihashes left with no live entry
			rerr  error
		)
		next, err := db.scanIndex(ctx, "sweep", start, func(mh []byte, ids []uint64) {
			if rerr != nil {
				return
			}
			var d []uint64
			for _, id := range ids {
				r, err := rs.get(id)
				if err != nil {
					rerr = err
					return
				}
				if r == nil {
					d = append(d, id)
				}
			}
			if len(d) > 0 {
				dead = append(dead, deadEntries{bytes.Clone(mh), d})
			}
			if len(d) == len(ids) {
				empty = append(empty, bytes.Clone(mh))
			}
		})
		if err == nil && rerr != nil {
			err = db.wrap("sweep", rerr)
		}
		if err != nil {
			return removed, err
		}
		if len(dead) > 0 {
			err := db.commit(ctx, "sweep", false, func(b Batch) error {
				for _, d := range dead {
					if err := db.layout.drop(b, d.mh, d.ids); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return removed, err
			}
			for _, d := range dead {
				removed += int64(len(d.ids))
			}
		}
		if len(empty) > 0 {
			err := db.commit(ctx, "sweep", true, func(b Batch) error {
				for _, mh := range empty {
					if err := db.layout.prune(db.eng, b, mh); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return removed, err
			}
		}
		start = next
	}
	// Population entries of removed records, which no Sample reads, are
	// not counted: removed counts index entries.
	return removed, db.sweepPopulations(ctx, rs)
}

// seekChunk is the first chunk AllSeek reads after a seek: small, so that
// what it reads past a multihash its caller skips is little; the chunks
// then double up to scanChunk while the caller takes what comes.
const seekChunk = 32

// AllSeek implements [store.SeekScanner]: All in ascending byte order of
// the multihashes (the form All yields), asking seek of each multihash,
// before its values are read, whether to take it or to go on from a
// later point.
func (db *DB) AllSeek(ctx context.Context, seek func(mh []byte) []byte) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		rs := &records{db: db}
		limit := seekChunk
		var entries []store.Entry // reused: yield copies each entry
		for start := []byte{prefixIndex}; start != nil; {
			var (
				rerr   error
				target []byte // where to go on from, once seek said so
				// The chunk's multihashes, back to back: one allocation
				// a chunk rather than one an entry.
				arena = make([]byte, 0, limit*40)
			)
			entries = entries[:0]
			if err := db.begin(ctx, "iterate"); err != nil {
				yield(store.Entry{}, err)
				return
			}
			next, err := db.layout.scan(db.eng, start, limit, func(mh []byte, ids []uint64) {
				if rerr != nil || target != nil {
					return
				}
				if t := seek(mh); t != nil && bytes.Compare(t, mh) > 0 {
					target = append([]byte{prefixIndex}, t...)
					return
				}
				if cap(arena)-len(arena) < len(mh) {
					arena = make([]byte, 0, max(cap(arena), len(mh)))
				}
				n := len(arena)
				arena = append(arena, mh...)
				vals, err := rs.values(ids, true)
				if err != nil {
					rerr = err
					return
				}
				if len(vals) > 0 {
					entries = append(entries, store.Entry{Multihash: multihash.Multihash(arena[n:len(arena):len(arena)]), Values: vals})
				}
			})
			db.opMu.RUnlock()
			if err != nil {
				err = db.wrap("iterate", err)
			} else if rerr != nil {
				err = db.wrap("iterate", rerr)
			}
			if err != nil {
				yield(store.Entry{}, err)
				return
			}
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
			switch {
			case target != nil:
				start, limit = target, seekChunk
			default:
				start, limit = next, min(2*limit, scanChunk)
			}
		}
	}
}
