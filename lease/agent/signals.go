package agent

import (
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Signals are what a node saw of the fleet's load at one scan: the gauges
// an operator watches ([Hooks].Scanned) and what an [Autoscaler] decides
// on. Each node computes its own from the catalog it scans; no node sees
// the others' free memory, so saturation is inferred from claims that
// stop happening.
type Signals struct {
	At   time.Time // the scan, by the manager's clock
	Node string

	// Items is the number of catalog rows the scan walked.
	Items int
	// Unclaimed counts the items without a live lease: idle, or in an
	// open auction.
	Unclaimed int
	// Saturated counts the unclaimed items that fit the node's whole
	// budget but not its free memory, once the fleet has claimed none of
	// the unclaimed items for [WithSaturationRounds] scans in a row: items
	// some node could hold, that no node has room for. It is 0 while
	// claims go on, however long the backlog: a node with room is taking
	// it.
	Saturated int
	// StalledRounds is the number of scans in a row in which items were
	// unclaimed and none of them was claimed.
	StalledRounds int
	// UnclaimedBytes sums the needs (Size or MinBid, the larger) of the
	// unclaimed items that fit the node's whole budget.
	UnclaimedBytes int64
	// TooLarge counts the unclaimed items above the node's whole budget
	// (see [Manager.Starved]): more nodes of this size do not help them.
	TooLarge int

	LiveNodes int // at the last heartbeat; 0 if the store does not count them
	Held      int // leases the node holds
	Used      int64
	Budget    int64
	// LastServed is the time of the node's last [Manager.Touch] or
	// [Manager.Serve], zero if none since Run started.
	LastServed time.Time
	// IdleSince is the later of Run's start, LastServed and the last scan
	// at which the node held a lease; zero while it holds one.
	IdleSince time.Time
}

// Idle returns how long the node has held no lease and served nothing,
// as of s.At; 0 while it holds a lease.
func (s Signals) Idle() time.Duration {
	if s.Held > 0 || s.IdleSince.IsZero() {
		return 0
	}
	return max(s.At.Sub(s.IdleSince), 0)
}

// NodesWanted is how many more nodes of this node's budget the unclaimed
// items need at least, ceil(UnclaimedBytes / Budget), once they are
// saturated; 0 otherwise. Packing may need more: a program that starts
// this many on a Grow asks again after the cooldown if they fell short.
func (s Signals) NodesWanted() int {
	if s.Saturated == 0 || s.Budget <= 0 {
		return 0
	}
	return int((s.UnclaimedBytes + s.Budget - 1) / s.Budget)
}

// wait is what the scan remembers of an unclaimed item.
type wait struct {
	since  time.Time // first seen unclaimed, by the manager's clock
	rounds int       // scans in a row at which it fitted the budget, not the free memory
}

// signals is the scan's running state: touched by the scan goroutine
// only (scan, bid, settle and won all run on it).
type signals struct {
	waits     map[string]wait // the unclaimed items of the last scan
	next      map[string]wait // being built by the current scan
	spare     map[string]wait // the map before waits, cleared for reuse
	unclaimed int
	bytes     int64 // UnclaimedBytes
	tooLarge  int
	claimed   int // items of waits the current scan did not find unclaimed
	won       int // items of waits the node won since the last scan ended
	items     int
	stall     int
	free      int64
	started   time.Time
	heldAt    time.Time // the last scan at which the node held a lease
	bidAt     time.Time // when the pending bid was placed
}

// beginScan starts the signals of a scan at now.
func (m *Manager) beginScan(now time.Time) {
	sg := &m.sig
	if sg.spare == nil {
		sg.spare = make(map[string]wait, len(sg.waits))
	}
	sg.next, sg.spare = sg.spare, nil
	clear(sg.next)
	sg.unclaimed, sg.tooLarge, sg.claimed, sg.items, sg.bytes = 0, 0, 0, 0, 0
	sg.free = m.free()
}

// countRow adds r to the current scan's signals.
func (m *Manager) countRow(r lease.Row, now time.Time) {
	sg := &m.sig
	sg.items++
	if r.Owner != "" {
		return // endScan counts the claims: no lookup per held row
	}
	sg.unclaimed++
	w, ok := sg.waits[r.ID]
	if !ok {
		w.since = now
	}
	switch need := max(r.Size, r.MinBid); {
	case need > m.c.budget:
		sg.tooLarge++
		w.rounds = 0
	case need > sg.free:
		sg.bytes += need
		w.rounds++
	default:
		sg.bytes += need
		w.rounds = 0
	}
	sg.next[r.ID] = w
}

// endScan closes the scan's signals, reports them (Hooks.Scanned) and
// asks the autoscaler, if any.
func (m *Manager) endScan(now time.Time) {
	sg := &m.sig
	// Claimed since the last scan: its unclaimed items that this one did
	// not find unclaimed (owned now, or gone from the catalog), and those
	// the node itself won meanwhile (claimLatency took them out of waits).
	sg.claimed, sg.won = sg.won, 0
	for id := range sg.waits {
		if _, ok := sg.next[id]; !ok {
			sg.claimed++
		}
	}
	sg.waits, sg.spare, sg.next = sg.next, sg.waits, nil
	// A node that does not bid because its renewals are slow is not out
	// of room: more nodes would not help a store that is behind.
	if sg.unclaimed > 0 && sg.claimed == 0 && !m.renewSlow.Load() {
		sg.stall++
	} else {
		sg.stall = 0
	}
	saturated := 0
	if sg.stall >= m.c.saturation {
		for _, w := range sg.waits {
			if w.rounds >= m.c.saturation {
				saturated++
			}
		}
	}
	m.mu.Lock()
	held, used := len(m.held), m.used+m.aside.keptBytes
	m.mu.Unlock()
	if held > 0 {
		sg.heldAt = now
	}
	s := Signals{
		At: now, Node: m.node, Items: sg.items, Unclaimed: sg.unclaimed, Saturated: saturated,
		StalledRounds: sg.stall, UnclaimedBytes: sg.bytes, TooLarge: sg.tooLarge, LiveNodes: int(m.liveNodes.Load()),
		Held: held, Used: used, Budget: m.c.budget,
	}
	if ns := m.lastServed.Load(); ns != 0 {
		s.LastServed = time.Unix(0, ns)
	}
	if held == 0 {
		s.IdleSince = sg.started
		for _, t := range []time.Time{s.LastServed, sg.heldAt} {
			if t.After(s.IdleSince) {
				s.IdleSince = t
			}
		}
	}
	if f := m.c.hooks.Scanned; f != nil {
		f(s)
	}
	if m.c.autoscaler == nil {
		return
	}
	d := m.c.autoscaler.Decide(s)
	if d == Steady {
		return
	}
	m.c.log.Info("lease: autoscaler", "node", m.node, "decision", d.String(), "saturated", s.Saturated,
		"unclaimed", s.Unclaimed, "held", s.Held, "live_nodes", s.LiveNodes)
	if f := m.c.hooks.Scale; f != nil {
		f(d, s)
	}
}

// claimLatency reports the claim latency of an item the node won (Hooks.Claimed):
// since the scan first saw it unclaimed.
func (m *Manager) claimLatency(ref lease.Ref, now time.Time) {
	w, ok := m.sig.waits[ref.Item]
	if !ok {
		return
	}
	delete(m.sig.waits, ref.Item)
	m.sig.won++
	if f := m.c.hooks.Claimed; f != nil {
		f(ref, max(now.Sub(w.since), 0))
	}
}

// bidClosed reports the window of the node's bid on item
// (Hooks.BidClosed): from the bid to the close the node learned of.
func (m *Manager) bidClosed(item string, placed, now time.Time) {
	if f := m.c.hooks.BidClosed; f != nil && !placed.IsZero() {
		f(item, max(now.Sub(placed), 0))
	}
}
