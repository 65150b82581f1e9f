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
	type removal struct {
		v   store.Value
		mhs []multihash.Multihash
	}
	pending := map[string]*removal{}
	var count, keys int64
	flush := func() error {
		// Under applyMu, so that no change of layout happens mid-round: a
		// key this node gains in a later layout is never dropped.
		n.applyMu.RLock()
		defer n.applyMu.RUnlock()
		if n.Layout().Epoch != place.Epoch() {
			return errMovedOn
		}
		for _, r := range pending {
			if err := st.Remove(ctx, r.v.ProviderID, r.v.ContextID, r.mhs...); err != nil {
				return fmt.Errorf("querynode: drop: %w", err)
			}
		}
		t.add(keys)
		clear(pending)
		count, keys = 0, 0
		return nil
	}
	for e, err := range st.All(ctx) {
		if err != nil {
			return fmt.Errorf("querynode: drop: %w", err)
		}
		if ambiguous(e.Multihash) || place.Owns(self, e.Multihash) {
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
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("querynode: drop: flush: %w", err)
	}
	return nil
}
