package agent

import (
	"context"
	"iter"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// view is a manager's picture of the catalog when its item source is a
// lease.Watcher: rows from the feed and from full listings, each row kept
// only while no Newer one has been seen. A Reset marks it stale; the next
// scan lists every row (and so does a scan once the reconciliation
// interval has passed since the last listing).
type view struct {
	mu     sync.Mutex
	rows   rowSet
	stale  bool        // a Reset since the last listing began
	listed time.Time   // when the last complete listing began
	during []lease.Row // changes applied while a listing runs
	lists  int         // listings under way (0 or 1: the scan lists)
	buf    []lease.Row // the last snapshot's rows
	// lapses: the feed reports each lapse (lease.LapseReporter), so no
	// lease is shown lapsed by its Expiry.
	lapses bool
}

func newView() *view { return &view{rows: newRowSet(0), stale: true} }

// rowSet is the newest row of each item, in a slice so that a snapshot is
// one copy: scans take one of a few thousand rows several times a second.
type rowSet struct {
	at   map[string]int // item -> index in rows
	rows []lease.Row
}

func newRowSet(n int) rowSet {
	return rowSet{at: make(map[string]int, n), rows: make([]lease.Row, 0, n)}
}

// merge keeps r unless the set has a Newer row of its item.
func (s *rowSet) merge(r lease.Row) {
	i, ok := s.at[r.ID]
	switch {
	case !ok:
		s.at[r.ID] = len(s.rows)
		s.rows = append(s.rows, r)
	case r.Newer(s.rows[i]):
		s.rows[i] = r
	}
}

// apply merges one row from the feed.
func (v *view) apply(r lease.Row) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rows.merge(r)
	if v.lists > 0 {
		v.during = append(v.during, r)
	}
}

// reset marks the view stale: the feed may have missed changes.
func (v *view) reset() {
	v.mu.Lock()
	v.stale = true
	v.mu.Unlock()
}

// due reports whether the view must be listed before a scan trusts it.
func (v *view) due(now time.Time, every time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stale || now.Sub(v.listed) >= every
}

// list replaces the view by a listing of src, merged with the changes the
// feed brings meanwhile. A listing replaces rather than merges, so rows
// the store lost (and put again with lower fences and versions) are not
// hidden by the old ones.
func (v *view) list(ctx context.Context, src lease.Lister, now time.Time) error {
	v.mu.Lock()
	v.stale = false
	v.lists++
	v.during = v.during[:0]
	n := len(v.rows.rows)
	v.mu.Unlock()
	fresh := newRowSet(n)
	var err error
	for r, e := range src.Rows(ctx) {
		if e != nil {
			err = e
			break
		}
		fresh.merge(r)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lists--
	if err != nil {
		v.stale = true
		return err
	}
	for _, r := range v.during {
		fresh.merge(r)
	}
	v.during = nil
	v.rows = fresh
	v.listed = now
	return nil
}

// put records a row read from the store (by Get), as a listing would.
func (v *view) put(r lease.Row) { v.apply(r) }

// snapshot yields the view's rows as a listing would show them at now: a
// lease whose Expiry is more than margin ago (by the manager's clock) is
// shown lapsed, since renewals and lapses are not reported (unless the
// feed reports lapses: then the feed says when); a bid on it confirms
// with the store.
func (v *view) snapshot(now time.Time, margin time.Duration) iter.Seq2[lease.Row, error] {
	v.mu.Lock()
	// From a random row on, as a map's order was: nodes that walk the
	// same catalog in the same order all evaluate the same due auction
	// first, and their transactions collide.
	all := v.rows.rows
	k := 0
	if len(all) > 0 {
		k = rand.IntN(len(all))
	}
	rows := append(append(v.buf[:0], all[k:]...), all[:k]...)
	v.buf = rows
	v.mu.Unlock()
	return func(yield func(lease.Row, error) bool) {
		for _, r := range rows {
			if !v.lapses && r.Owner != "" && !r.Expiry.IsZero() && now.After(r.Expiry.Add(margin)) {
				r.Owner, r.State, r.Ready, r.Expiry = "", lease.Idle, false, time.Time{}
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// watch feeds the view from the store's change feed until ctx is done,
// starting the feed again (with a Reset) after an error.
func (m *Manager) watch(ctx context.Context) {
	wait := m.c.backoffBase
	for ctx.Err() == nil {
		for c, err := range m.feed.Watch(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					m.c.log.Warn("lease: watch", "node", m.node, "err", err)
				}
				break
			}
			wait = m.c.backoffBase
			if c.Reset {
				m.view.reset()
				continue
			}
			m.view.apply(c.Row)
			m.kickOn(c.Row)
		}
		m.view.reset()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, m.c.backoffMax)
	}
}

// kickOn brings the next scan forward, to join open auctions only, when
// the feed shows a change to the auction the node bid in (closed, or
// granted to it), or an auction open on an unowned item that fits the
// node's free memory while it bids in none. Only the node's ticks and its
// own closing bids open auctions: if every node kicked by one change
// opened its own, each would wait for its window with no one left free
// to join.
func (m *Manager) kickOn(r lease.Row) {
	m.mu.Lock()
	pend, free := m.pending, m.c.budget-m.used
	m.mu.Unlock()
	if r.ID == pend || (pend == "" && r.Owner == "" && r.Bids > 0 && free > 0 && free >= r.Size && free >= r.MinBid) {
		m.kickScan(false)
	}
}

// rows is what a scan walks: the view when the manager has a feed
// (listed first when stale or due), else a listing of the item source.
func (m *Manager) rows(ctx context.Context, now time.Time) iter.Seq2[lease.Row, error] {
	if m.feed == nil {
		return m.c.source.Rows(ctx)
	}
	if m.view.due(now, m.c.reconcile) {
		if err := m.view.list(ctx, m.c.source, now); err != nil {
			return func(yield func(lease.Row, error) bool) { yield(lease.Row{}, err) }
		}
	}
	return m.view.snapshot(now, m.c.margin)
}

// confirm reads item's row after the store refused a bid as leased, so
// that the view stops showing a renewed lease as lapsed.
func (m *Manager) confirm(ctx context.Context, item string) {
	if m.feed == nil {
		return
	}
	r, err := m.s.Get(ctx, item)
	if err != nil {
		if ctx.Err() == nil {
			m.c.log.Debug("lease: read refused item", "node", m.node, "item", item, "err", err)
		}
		return
	}
	m.view.put(r)
}
