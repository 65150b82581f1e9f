package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/indexkit/indexkit/lease"
)

// to under WithReplication, else item itself.
func (m *Manager) group(item string) string {
	if !m.c.replication {
		return item
	}
	g, _ := lease.SplitReplicaID(item)
	return g
}

// occupied returns the groups the node holds a slot of, or bids on. The
// caller holds m.mu.
func (m *Manager) occupied() map[string]bool {
	if !m.c.replication {
		return nil
	}
	out := make(map[string]bool, len(m.held)+1)
	for item := range m.held {
		out[m.group(item)] = true
	}
	if m.pending != "" {
		out[m.group(m.pending)] = true
	}
	return out
}

func (m *Manager) free() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c.budget - m.used
}

// scan evaluates the auction it bid in and due auctions, picks up grants
// it has not acquired, and bids on one claimable item: an open auction
// first, else, if open, an idle item.
//
// It returns true when it could have opened one but open was false: the
// caller scans again soon.
func (m *Manager) scan(ctx context.Context, open bool) (wantOpen bool) {
	now := m.lc.Clock.Now()
	m.mu.Lock()
	pend := m.pending
	m.mu.Unlock()
	if pend != "" {
		m.evaluate(ctx, pend)
	}

	var auctions, idle []lease.Row
	m.beginScan(now)
	for r, err := range m.rows(ctx, now) {
		if err != nil {
			if ctx.Err() == nil {
				m.c.log.Warn("lease: list items", "node", m.node, "err", err)
			}
			return false
		}
		m.countRow(r, now)
		// Most rows of a large catalog are held by other nodes: one
		// lock and no more map lookups than their case needs.
		var bo backoff
		var mine bool
		m.mu.Lock()
		if r.Owner == "" || r.Owner == m.node {
			// For a row owned by another node, holding the item
			// (the view behind, or the lease lost) changes nothing
			// below: skip the lookup.
			_, mine = m.held[r.ID]
		}
		_, starved := m.aside.starved[r.ID]
		if r.Owner == "" {
			bo = m.backoff[r.ID]
		}
		if r.ID == m.pending && r.Bids > 0 {
			m.closes = r.AuctionDeadline // scanLoop scans again then
		}
		m.mu.Unlock()
		m.observe(r, mine, starved) // a held item's new commit, an item too large (keep.go, starve.go)
		switch {
		case mine:
		case r.Owner == m.node:
			m.won(ctx, lease.Ref{Item: r.ID, Holder: m.node, Fence: r.Fence}, r)
		case r.Owner != "":
		case r.Bids > 0 && !r.AuctionDeadline.IsZero() && !now.Before(r.AuctionDeadline):
			m.evaluate(ctx, r.ID) // a due auction nobody closed
		case now.Before(bo.until):
		case r.Bids > 0:
			auctions = append(auctions, r)
		default:
			idle = append(idle, r)
		}
	}
	m.endScan(now)
	m.mu.Lock()
	pend = m.pending
	busy := m.occupied()
	m.mu.Unlock()
	if pend != "" || ctx.Err() != nil || m.renewSlow.Load() {
		return false
	}
	free := m.free()
	fits := func(rs []lease.Row) []lease.Row {
		out := rs[:0]
		for _, r := range rs {
			if free >= r.Size && free >= r.MinBid && free > 0 && !busy[m.group(r.ID)] {
				out = append(out, r)
			}
		}
		return out
	}
	cands := fits(auctions) // join open auctions first, so they short-circuit
	if len(cands) == 0 {
		cands = fits(idle)
		if !open {
			return len(cands) > 0
		}
	}
	if len(cands) == 0 {
		return false
	}
	r := cands[rand.IntN(len(cands))]
	m.bid(ctx, r, free)
	return false
}

func (m *Manager) bid(ctx context.Context, r lease.Row, free int64) {
	placed := m.lc.Clock.Now()
	var span trace.Span
	if m.c.tracer != nil {
		ctx, span = m.c.tracer.Start(ctx, "agent.claim", trace.WithAttributes(
			attribute.String("lease.item", r.ID), attribute.String("lease.node", m.node),
			attribute.Int64("lease.free_memory", free)))
	}
	res, err := m.s.Bid(ctx, r.ID, m.node, free)
	hooks := m.c.hooks
	if err != nil {
		if span != nil {
			endSpan(span, err)
		}
		if ctx.Err() != nil {
			return
		}
		for _, reason := range []error{lease.ErrBidPending, lease.ErrBidTooLow, lease.ErrLeased, lease.ErrAuctionClosed} {
			if errors.Is(err, reason) {
				if hooks.BidRejected != nil {
					hooks.BidRejected(r.ID, m.node, reason)
				}
				break
			}
		}
		m.c.log.Debug("lease: bid rejected", "node", m.node, "item", r.ID, "err", err)
		if errors.Is(err, lease.ErrLeased) {
			m.confirm(ctx, r.ID) // the view thought the lease lapsed
		}
		m.backOff(r.ID)
		// Free to bid again: join another open auction now, or open one
		// after a random spread, rather than wait for the next tick.
		m.kickScan(false)
		return
	}
	if hooks.BidPlaced != nil {
		hooks.BidPlaced(r.ID, m.node, free)
	}
	m.mu.Lock()
	m.pending, m.closes, m.claimSpan = r.ID, time.Time{}, span
	m.mu.Unlock()
	m.sig.bidAt = placed
	// A bid that reached the threshold closed the auction, unless the
	// store holds grants (LossGuard): then the bid stays pending.
	if res.Result != nil && res.Result.Outcome != lease.NotDue {
		m.settle(ctx, *res.Result)
		m.kickScan(true) // free to bid again
		return
	}
	m.learnDeadline(ctx, r.ID)
}

// learnDeadline reads the row of the node's pending bid for its auction's
// close, so that scanLoop scans then: the feed may not show the bid (a
// change made before the feed's subscription is lost, as the first scans
// of a manager can make), and without the close a node whose ticks are
// far apart would wait for the next one.
func (m *Manager) learnDeadline(ctx context.Context, item string) {
	if m.view == nil {
		return // without a feed every scan lists the row, the next tick included
	}
	r, err := m.s.Get(ctx, item)
	if err != nil {
		return // the next scan or the feed tells
	}
	m.view.put(r)
	m.mu.Lock()
	if m.pending == item && r.Bids > 0 && !r.AuctionDeadline.IsZero() {
		m.closes = r.AuctionDeadline
	}
	m.mu.Unlock()
}

func (m *Manager) evaluate(ctx context.Context, item string) {
	res, err := m.s.Evaluate(ctx, item)
	if err != nil {
		if ctx.Err() == nil {
			m.c.log.Warn("lease: evaluate", "node", m.node, "item", item, "err", err)
		}
		if errors.Is(err, lease.ErrNotFound) {
			m.clearPending(item, "gone")
		}
		return
	}
	switch res.Outcome {
	case lease.NotDue:
	case lease.Granted, lease.NoWinner:
		m.settle(ctx, res)
	case lease.NoAuction:
		// Closed by someone else (or our own bid's short circuit): the
		// row tells whether we won; the scan acquires it if so.
		m.clearPending(item, "closed elsewhere")
	}
}

// clearPending ends the node's pending bid on item, if that is the
// item, reporting its window (Hooks.BidClosed) and ending its span with
// outcome.
func (m *Manager) clearPending(item, outcome string) {
	m.mu.Lock()
	if m.pending != item {
		m.mu.Unlock()
		return
	}
	m.pending = ""
	span := m.claimSpan
	m.claimSpan = nil
	m.mu.Unlock()
	m.bidClosed(item, m.sig.bidAt, m.lc.Clock.Now())
	m.sig.bidAt = time.Time{}
	if span != nil {
		span.SetAttributes(attribute.String("lease.outcome", outcome))
		span.End()
	}
}

// settle acts on a closed auction.
func (m *Manager) settle(ctx context.Context, res lease.AuctionResult) {
	won := res.Outcome == lease.Granted && res.Grant.Holder == m.node
	outcome := map[bool]string{true: "won", false: "lost"}[won]
	if res.Outcome == lease.NoWinner {
		outcome = "no winner"
	}
	m.clearPending(res.Item, outcome)
	if won {
		m.won(ctx, res.Grant.Ref, lease.Row{})
		return
	}
	m.backOff(res.Item)
}

func (m *Manager) backOff(item string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.backoff[item]
	d := m.c.backoffBase << min(b.attempts, 30)
	if d <= 0 || d > m.c.backoffMax {
		d = m.c.backoffMax
	}
	b.attempts++
	b.until = m.lc.Clock.Now().Add(time.Duration(rand.Int64N(int64(d)) + 1))
	m.backoff[item] = b
}
