package querynode

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
)

// tableCopy is a copy's bulk load: the Puts the guard let through,
// gathered and ingested as sorted tables (see "Copying by tables" in the
// package documentation). One table at a time is built and ingested on a
// goroutine of its own while the copy gathers the next.
type tableCopy struct {
	ld store.BulkLoad
	// from is how many tombstones the guard had recorded when the load
	// took its first entry since it was last sealed: those recorded since
	// are re-checked when that table is ingested. Guarded by g.mu.
	from int
	// inflight, if not nil, gets the outcome of the table in flight.
	inflight chan error
}

// newTableCopy starts a bulk load, or returns nil when the store has no
// bulk path or the node is to copy key by key.
func (n *Node) newTableCopy(ctx context.Context) (*tableCopy, error) {
	bl, ok := n.cfg.Store.(store.BulkLoader)
	if !ok || n.cfg.CopyKeyByKey {
		return nil, nil
	}
	ld, err := bl.NewBulkLoad(ctx)
	if err != nil {
		return nil, fmt.Errorf("start a bulk load: %w", err)
	}
	return &tableCopy{ld: ld}, nil
}

// wait returns once no table is in flight, with the error of the last.
func (tc *tableCopy) wait() error {
	if tc.inflight == nil {
		return nil
	}
	err := <-tc.inflight
	tc.inflight = nil
	return err
}

// close waits for the table in flight and discards what was not sealed.
func (tc *tableCopy) close() {
	tc.wait()
	tc.ld.Close()
}

// seal seals what tc gathered and has it built and ingested on a
// goroutine, once the table before it is in; the error of that one, if
// any, is returned.
func (n *Node) seal(ctx context.Context, epoch uint64, g *guard, tc *tableCopy) error {
	if err := tc.wait(); err != nil {
		return err
	}
	if tc.ld.Len() == 0 {
		return nil
	}
	g.mu.Lock()
	from := tc.from
	g.mu.Unlock()
	tb := tc.ld.Seal()
	done := make(chan error, 1)
	go func() {
		defer tb.Close()
		err := n.ingestTable(ctx, epoch, g, tb, from)
		if err != nil && !errors.Is(err, errMovedOn) {
			err = fmt.Errorf("%w: %w", errLoad, err)
		}
		done <- err
	}()
	tc.inflight = done
	return nil
}

// ingestTable builds tb (with no lock held) and ingests it under g.mu, so
// that no live op lands meanwhile.
//
// The guard filtered each Put when it was gathered; what it must still
// catch is a live Remove of (mh, provider, context) recorded after that:
// the Remove is in the store, and the table, newer than everything,
// would bring the entry back. So each tombstone recorded since from is
// re-checked: if the store does not hold that entry just before the table
// goes in, it is removed again just after; if it does (a live Put brought
// it back after the Remove), it stays, and the table's copy of it changes
// nothing. Live removals of whole contexts or providers need no re-check:
// they deleted the records the gathered entries name, and records are
// never reused, so those entries stay invisible; and metadata lives in
// the records, where the latest live update already is.
func (n *Node) ingestTable(ctx context.Context, epoch uint64, g *guard, tb store.BulkTable, from int) error {
	if err := tb.Build(ctx); err != nil {
		return fmt.Errorf("%w: build a table: %w", ErrCopy, err)
	}
	n.applyMu.RLock()
	defer n.applyMu.RUnlock()
	if n.Layout().Epoch != epoch {
		return errMovedOn
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := n.cfg.Store
	var again []tomb
	for _, r := range g.rms[min(from, len(g.rms)):] {
		held, err := holds(ctx, st, r)
		if err != nil {
			return fmt.Errorf("%w: re-check a live removal: %w", ErrCopy, err)
		}
		if !held {
			again = append(again, r)
		}
	}
	if err := tb.Ingest(ctx); err != nil {
		return fmt.Errorf("%w: ingest a table: %w", ErrCopy, err)
	}
	for _, r := range again {
		if err := st.Remove(ctx, r.p, r.c, r.mh); err != nil {
			return fmt.Errorf("%w: re-apply a live removal after a table: %w", ErrCopy, err)
		}
	}
	return nil
}

// holds reports whether st has the value of (r.p, r.c) on r.mh.
func holds(ctx context.Context, st store.Store, r tomb) (bool, error) {
	vs, err := st.Get(ctx, r.mh)
	if err != nil {
		return false, err
	}
	for _, v := range vs {
		if v.ProviderID == r.p && bytes.Equal(v.ContextID, r.c) {
			return true, nil
		}
	}
	return false, nil
}
