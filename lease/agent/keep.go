package agent

import (
	"context"
	"sort"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// aside is what the Manager keeps beside its held items: kept indexes
// (this file) and starved items (starve.go), guarded by Manager.mu.
type aside struct {
	kept      map[string]keptIndex // item → index kept after its lease was lost
	keptBytes int64                // their sizes, summed; Used counts them
	starved   map[string]int64     // item → the bytes it needs, above the budget
}

// keptIndex is an index the Indexer still holds for an item whose lease
// the node lost.
type keptIndex struct {
	commit string
	size   int64
	at     time.Time // when the lease was lost, by the manager's clock
}

// WithKeepLost sets how long the manager keeps the index of an item whose
// lease it lost (a refused renewal, a lapsed deadline) before it drops it,
// so that winning the item back at the same commit needs no second Index
// call (default: the TTL; 0 or less: drop at once, as eviction, draining
// and failed indexing always do). A kept index counts in [Manager.Used]
// but not against bids: the node bids its budget minus its held items,
// and kept indexes are dropped, oldest first, whenever held items and
// kept ones together exceed the budget, before any held item is evicted.
func WithKeepLost(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			d = -1
		}
		c.keepLost = d
		return nil
	}
}

func (m *Manager) keepFor() time.Duration {
	if m.c.keepLost == 0 {
		return m.lc.TTL
	}
	return m.c.keepLost
}

// lostIndex disposes of the index of h, just forgotten after its lease
// was lost: kept if it is built and keeping is on, else dropped.
func (m *Manager) lostIndex(h *held) {
	item := h.l.Ref().Item
	m.mu.Lock()
	keep := h.ready && h.commit != "" && m.keepFor() > 0
	if keep {
		if m.aside.kept == nil {
			m.aside.kept = make(map[string]keptIndex)
		}
		m.aside.kept[item] = keptIndex{commit: h.commit, size: h.size, at: m.lc.Clock.Now()}
		m.aside.keptBytes += h.size
	}
	m.mu.Unlock()
	if !keep {
		m.c.idx.Drop(item)
		return
	}
	m.c.log.Info("lease: index kept", "node", m.node, "item", item, "commit", h.commit, "size", h.size)
	m.dropKept(false)
}

// takeKept removes item's kept index and reports whether it was built
// at commit, with its size. One at another commit is dropped. The
// caller holds m.mu; drop, when not empty, must be passed to the
// Indexer's Drop after the lock is released and before the item is
// indexed.
func (m *Manager) takeKept(item, commit string) (size int64, ok bool, drop string) {
	k, found := m.aside.kept[item]
	if !found {
		return 0, false, ""
	}
	delete(m.aside.kept, item)
	m.aside.keptBytes -= k.size
	if k.commit != commit {
		return 0, false, item
	}
	return k.size, true, ""
}

// dropKept drops kept indexes: all of them if all, else those kept for
// longer than WithKeepLost and, oldest first, those that make the held
// and kept indexes together exceed the budget.
func (m *Manager) dropKept(all bool) {
	m.mu.Lock()
	now := m.lc.Clock.Now()
	type entry struct {
		item string
		k    keptIndex
	}
	var es []entry
	for item, k := range m.aside.kept {
		es = append(es, entry{item, k})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].k.at.Before(es[j].k.at) })
	var drop []string
	for _, e := range es {
		if !all && now.Sub(e.k.at) < m.keepFor() && m.used+m.aside.keptBytes <= m.c.budget {
			continue
		}
		delete(m.aside.kept, e.item)
		m.aside.keptBytes -= e.k.size
		drop = append(drop, e.item)
	}
	m.mu.Unlock()
	for _, item := range drop {
		m.c.idx.Drop(item)
	}
}

// observe looks at a row the scan listed: a held item's new commit is
// indexed (refresh), an unowned item too large for the node is reported
// starved (starve.go). starved says whether r.ID is recorded starved.
func (m *Manager) observe(r lease.Row, mine, starved bool) {
	switch {
	case mine:
		m.refresh(r)
	case starved || r.Owner == "":
		m.checkStarved(r)
	}
}

// refresh records the latest row of a held item and wakes its holder if
// the row names a commit other than the one indexed.
func (m *Manager) refresh(r lease.Row) {
	m.mu.Lock()
	h := m.held[r.ID]
	wake := false
	if h != nil && !h.gone && r.Fence == h.l.Ref().Fence && (r.Newer(h.want) || r.Commit != h.want.Commit) {
		h.want = r
	}
	if h != nil && h.ready && h.want.Commit != "" && h.want.Commit != h.commit {
		wake = true
	}
	m.mu.Unlock()
	if wake {
		select {
		case h.refresh <- struct{}{}:
		default:
		}
	}
}

// reindex indexes a held item again at the commit of the latest row seen,
// while the Indexer keeps serving the index it has, and marks the row
// ready again with the new size. A failure keeps the old index and backs
// the item off before the next attempt.
func (m *Manager) reindex(ictx, work context.Context, h *held) {
	ref := h.l.Ref()
	m.mu.Lock()
	row, cur, gone := h.want, h.commit, h.gone
	bo := m.backoff[ref.Item]
	m.mu.Unlock()
	if gone || row.Commit == "" || row.Commit == cur || m.lc.Clock.Now().Before(bo.until) {
		return
	}
	m.c.log.Info("lease: reindex", "node", m.node, "item", ref.Item, "commit", row.Commit, "was", cur)
	size, err := m.index(ictx, row)
	if f := m.c.hooks.Indexed; f != nil {
		f(ref, size, err)
	}
	if err == nil {
		ready, now := true, m.lc.Clock.Now()
		_, err = h.l.Update(ictx, lease.Mutation{Ready: &ready, Size: &size, LastIndexed: &now})
	}
	if err != nil {
		if ictx.Err() == nil {
			m.c.log.Warn("lease: reindex", "node", m.node, "item", ref.Item, "commit", row.Commit, "err", err)
			m.backOff(ref.Item)
		}
		return
	}
	m.mu.Lock()
	if !h.gone {
		m.used += size - h.size
		h.size, h.commit, h.row = size, row.Commit, row
	}
	delete(m.backoff, ref.Item)
	m.mu.Unlock()
	m.evict(work)
	m.refresh(row) // the commit may have moved on again meanwhile
}
