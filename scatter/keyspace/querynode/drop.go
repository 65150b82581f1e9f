package querynode

import (
	"bytes"
	"context"
	"fmt"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

const dropChunk = 4096 // multihashes removed per round

// drop removes from the store every key the node holds and does not own
// under place.
func (n *Node) drop(ctx context.Context, t *task, place *keyspace.Placement, self int) error {
	st := n.cfg.Store
	gone := func(mh multihash.Multihash) bool { return !ambiguous(mh) && !place.Owns(self, mh) }
	_, err := removeWhere(ctx, st, "drop", gone, func(remove func() error, keys int64) error {
		// Under applyMu, so that no change of layout happens mid-round: a
		// key this node gains in a later layout is never dropped.
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
	})
	if err != nil {
		return err
	}
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("querynode: drop: flush: %w", err)
	}
	return nil
}

// removeWhere removes from st every multihash for which gone holds, with
// all its values, reading the store once and removing dropChunk values a
// round. Each round runs through round, which calls remove (or refuses
// the round with an error, which ends the scan) and learns how many
// multihashes it removes; what names the work in errors. It returns the
// number of multihashes removed.
func removeWhere(ctx context.Context, st store.Store, what string, gone func(multihash.Multihash) bool, round func(remove func() error, keys int64) error) (int64, error) {
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
	for e, err := range st.All(ctx) {
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
