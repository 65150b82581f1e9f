package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
)

// RangeDeleter is an optional capability of a [Batch]: it deletes every
// key in [start, end) with one write, whatever their number (Pebble's
// range deletion).
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

// RemoveRanges implements [store.RangeRemover]. It needs an engine whose
// batches delete ranges and a database that holds no population entry
// (opened with [Config.NoPopulations] and never holding one since): a
// range deletion of index keys would leave a population naming
// multihashes the index no longer has. Otherwise it returns an error
// wrapping [errors.ErrUnsupported] and removes nothing.
//
// It commits alone ([DB.commit]'s exclusive mode), so no index write is
// in flight while it deletes; an engine that gathers index writes (sorted
// runs) applies them first, so that none is left to land after the
// deletion.
func (db *DB) RemoveRanges(ctx context.Context, spans ...store.Span) error {
	const op = "remove ranges"
	for _, s := range spans {
		if s.End != nil && string(s.Start) >= string(s.End) {
			return db.wrap(op, fmt.Errorf("span [%x, %x) is empty or reversed", s.Start, s.End))
		}
	}
	if !db.noPops {
		return db.wrap(op, fmt.Errorf("%w: the store keeps context populations, which a range deletion would leave behind", errors.ErrUnsupported))
	}
	db.beginIndexRewrite()
	defer db.endIndexRewrite()
	return db.commit(ctx, op, true, func(b Batch) error {
		rd, ok := b.(RangeDeleter)
		if !ok {
			return fmt.Errorf("%w: the engine deletes no ranges", errors.ErrUnsupported)
		}
		if pops, err := db.hasPopulations(); err != nil {
			return err
		} else if pops {
			return fmt.Errorf("%w: the store holds populations written before it was opened without them", errors.ErrUnsupported)
		}
		for _, s := range spans {
			start := append([]byte{prefixIndex}, s.Start...)
			end := []byte{prefixIndex + 1}
			if s.End != nil {
				end = append([]byte{prefixIndex}, s.End...)
			}
			if err := rd.DeleteRange(start, end); err != nil {
				return err
			}
		}
		return nil
	})
}

// hasPopulations reports whether the engine holds any population entry.
func (db *DB) hasPopulations() (bool, error) {
	found := false
	err := db.eng.Scan([]byte{prefixPopulation}, []byte{prefixPopulation + 1}, func(_, _ []byte) error {
		found = true
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return found, err
}
