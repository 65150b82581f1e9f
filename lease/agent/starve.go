package agent

import (
	"sort"

	"github.com/indexkit/indexkit/lease"
)

// StarvedItem is an item the node never bids on: it is unowned and needs
// more than the node's whole budget.
type StarvedItem struct {
	Item string
	// Need is the larger of the row's Size and MinBid, in bytes.
	Need int64
}

// checkStarved records r as starved if it is unowned and too large for
// the budget (reporting it once, to Hooks.Starved and the log), and
// forgets it once it fits or someone owns it.
func (m *Manager) checkStarved(r lease.Row) {
	need := max(r.Size, r.MinBid)
	m.mu.Lock()
	old, was := m.aside.starved[r.ID]
	now := r.Owner == "" && need > m.c.budget
	switch {
	case now && (!was || old != need):
		if m.aside.starved == nil {
			m.aside.starved = make(map[string]int64)
		}
		m.aside.starved[r.ID] = need
	case !now && was:
		delete(m.aside.starved, r.ID)
	}
	m.mu.Unlock()
	if now && !was {
		m.c.log.Warn("lease: item too large for the budget; not bidding", "node", m.node, "item", r.ID,
			"size", r.Size, "min_bid", r.MinBid, "budget", m.c.budget)
		if f := m.c.hooks.Starved; f != nil {
			f(r.ID, need)
		}
	}
}

// Starved returns the items the node has found unowned and too large for
// its budget (Size or MinBid above it), sorted by item: it never bids on
// them. An item leaves the list once the scan finds it fits or owned.
func (m *Manager) Starved() []StarvedItem {
	m.mu.Lock()
	out := make([]StarvedItem, 0, len(m.aside.starved))
	for item, need := range m.aside.starved {
		out = append(out, StarvedItem{Item: item, Need: need})
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Item < out[j].Item })
	return out
}
