package querynode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

const dropChunk = 4096 // multihashes removed per round

// drop removes from the store every key the node holds and does not own
// under place. A store that removes ranges ([store.RangeRemover], with
// [store.SeekScanner]) loses the ring segments the node no longer owns
// by range deletions, one write per code and digest length, whatever the
// number of keys; it is read only for the keys not placed by their
// digest, which go key by key, as every key does in other stores.
func (n *Node) drop(ctx context.Context, t *task, place *keyspace.Placement, self int) error {
	st := n.cfg.Store
	gone := func(mh multihash.Multihash) bool { return !ambiguous(mh) && !place.Owns(self, mh) }
	// Under applyMu, so that no change of layout happens mid-round: a
	// key this node gains in a later layout is never dropped.
	round := func(remove func() error, keys int64) error {
		n.applyMu.RLock()
		defer n.applyMu.RUnlock()
		if n.Layout().Epoch != place.Epoch() {
			return errMovedOn
		}
		if err := remove(); err != nil {
			return err
		}
		t.add(keys)
		return nil
	}
	entries := st.All(ctx)
	var headers [][]byte // of the keys placed by their digest, to drop by ranges
	rr, ok := st.(store.RangeRemover)
	sk, seeks := st.(store.SeekScanner)
	if ok && seeks {
		// A removal of no span tells whether the store can at all.
		switch err := rr.RemoveRanges(ctx); {
		case err == nil:
			entries = sk.AllSeek(ctx, func(mh []byte) []byte {
				if _, ok := positional(mh); !ok {
					return nil
				}
				h := header(mh)
				end := prefixEnd(h)
				if end != nil {
					headers = append(headers, slices.Clone(h))
				}
				return end
			})
		case !errors.Is(err, errors.ErrUnsupported):
			return fmt.Errorf("querynode: drop: %w", err)
		}
	}
	if _, err := removeWhere(ctx, st, entries, "drop", gone, round); err != nil {
		return err
	}
	if len(headers) > 0 {
		segs := segmentsWhere(place, func(mh multihash.Multihash) bool { return !place.Owns(self, mh) })
		for _, h := range headers {
			spans := segs.spans(h)
			err := round(func() error {
				if err := rr.RemoveRanges(ctx, spans...); err != nil {
					return fmt.Errorf("querynode: drop: %w", err)
				}
				t.addRanges(int64(len(spans)))
				return nil
			}, 0)
			if err != nil {
				return err
			}
		}
	}
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("querynode: drop: flush: %w", err)
	}
	return nil
}

// removeWhere removes from st every multihash of entries (a scan of st)
// for which gone holds, with all its values, removing dropChunk values a
// round. Each round runs through round, which calls remove (or refuses
// the round with an error, which ends the scan) and learns how many
// multihashes it removes; what names the work in errors. It returns the
// number of multihashes removed.
func removeWhere(ctx context.Context, st store.Store, entries iter.Seq2[store.Entry, error], what string, gone func(multihash.Multihash) bool, round func(remove func() error, keys int64) error) (int64, error) {
	type removal struct {
		v   store.Value
		mhs []multihash.Multihash
	}
	pending := map[string]*removal{}
	var count, keys, total int64
	flush := func() error {
		err := round(func() error {
			for _, r := range pending {
				if err := st.Remove(ctx, r.v.ProviderID, r.v.ContextID, r.mhs...); err != nil {
					return fmt.Errorf("querynode: %s: %w", what, err)
				}
			}
			return nil
		}, keys)
		if err != nil {
			return err
		}
		total += keys
		clear(pending)
		count, keys = 0, 0
		return nil
	}
	for e, err := range entries {
		if err != nil {
			return total, fmt.Errorf("querynode: %s: %w", what, err)
		}
		if !gone(e.Multihash) {
			continue
		}
		mh := bytes.Clone(e.Multihash)
		for _, v := range e.Values {
			k := ctxKey(v.ProviderID, v.ContextID)
			r := pending[k]
			if r == nil {
				r = &removal{v: v.Clone()}
				pending[k] = r
			}
			r.mhs = append(r.mhs, mh)
			count++
		}
		keys++
		if count >= dropChunk {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	return total, flush()
}
