package leasetest

import (
	"slices"

	"github.com/indexkit/indexkit/lease"
)

func (m *linModel) renew(s linState, in *linInput, out *linOutput) []linState {
	if out != nil && (out.err != nil || len(out.renewals) != len(in.refs)) {
		return nil
	}
	states := []linState{s}
	for i, ref := range in.refs {
		var next []linState
		for _, s := range states {
			for _, c := range m.check(s, ref) {
				if out != nil && c.err != class(out.renewals[i].Err) {
					continue
				}
				t := c.s
				from := max(in.call, t.tmin)
				if c.err == nil && out == nil {
					t.expLo, t.expHi, t.expExact = from+m.ttl, in.ret+m.ttl, false
				} else if c.err == nil {
					x := out.renewals[i].Expiry.UnixNano()
					if !m.within(x, from+m.ttl, in.ret+m.ttl, false) {
						continue
					}
					t.expLo, t.expHi, t.expExact = x, x, true
				}
				next = append(next, t)
			}
		}
		states = next
	}
	return states
}

func (m *linModel) update(s linState, in *linInput, out *linOutput) []linState {
	var next []linState
	for _, c := range m.check(s, in.refs[0]) {
		t := c.s
		if c.err != nil {
			if out.is(c.err) {
				next = append(next, t)
			}
			continue
		}
		mu := &in.mut
		if mu.hasIfVer && mu.ifVersion != t.version {
			if out.is(lease.ErrVersionConflict) {
				next = append(next, t)
			}
			continue
		}
		if !out.is(nil) {
			continue
		}
		if mu.commit != "" {
			t.commit = mu.commit
		}
		if mu.ready >= 0 {
			t.ready = mu.ready == 1
		}
		if mu.size >= 0 {
			t.size, t.minBid = mu.size, m.cfg.MinBidFor(mu.size)
		}
		if mu.draining {
			t.draining = true
		}
		t.version++
		if out == nil {
			next = append(next, t)
		} else if u, ok := m.matchRow(t, &out.row); ok {
			next = append(next, u)
		}
	}
	return next
}

func (m *linModel) bid(s linState, in *linInput, out *linOutput) []linState {
	switch {
	case s.owner != "":
		return when(out.is(lease.ErrLeased), s)
	case in.free < s.minBid:
		return when(out.is(lease.ErrBidTooLow), s)
	}
	var next []linState
	if i := slices.IndexFunc(s.pend, func(p linPend) bool { return p.holder == in.holder }); i >= 0 {
		p := s.pend[i]
		before, after := m.possible(p.lo, p.hi, in, s.tmin)
		if before && out.is(lease.ErrBidPending) {
			next = append(next, s)
		}
		if !after {
			return next
		}
		s = m.passed(s, p.lo)
		s.pend = slices.Delete(slices.Clone(s.pend), i, i+1)
	}
	if s.open {
		before, after := m.possible(s.dlLo, s.dlHi, in, s.tmin)
		if after && out.is(lease.ErrAuctionClosed) {
			// A late bid closes the auction, unseen, and is not placed.
			th := m.threshold(&s)
			if t, ok := m.close(m.passed(s, s.dlLo), in, true, th > 0 && len(s.bids) >= th, nil); ok {
				next = append(next, t)
			}
		}
		if !before {
			return next
		}
	}
	if !out.is(nil) {
		return next
	}
	from := max(in.call, s.tmin)
	if !s.open {
		s.round++
		s.open = true
		s.dlLo, s.dlHi, s.dlExact = from+m.window, in.ret+m.window, false
	}
	s.bids = append(slices.Clone(s.bids), linOffer{in.holder, in.free})
	s.pend = append(slices.Clone(s.pend), linPend{in.holder, s.round, from + m.window + m.grace, in.ret + m.window + m.grace})
	n := len(s.bids)
	var r *lease.AuctionResult // nil for an unknown outcome
	if out != nil {
		b := &out.bid
		if b.Round != s.round || b.Seq != uint64(n) || b.Bids != n {
			return next
		}
		r = b.Result
	}
	if th := m.threshold(&s); th > 0 && n >= th {
		if out != nil && r == nil {
			return next
		}
		if t, ok := m.close(s, in, false, true, r); ok {
			next = append(next, t)
		}
		return next
	}
	if r == nil {
		next = append(next, s)
	}
	return next
}

func when(ok bool, s linState) []linState {
	if ok {
		return []linState{s}
	}
	return nil
}

func (m *linModel) evaluate(s linState, in *linInput, out *linOutput) []linState {
	if !out.is(nil) {
		return nil
	}
	var r *lease.AuctionResult // nil for an unknown outcome
	if out != nil {
		r = &out.eval
	}
	if !s.open {
		return when(r == nil || r.Outcome == lease.NoAuction && r.Unleased == s.unleased, s)
	}
	th := m.threshold(&s)
	short := th > 0 && len(s.bids) >= th
	before, after := m.possible(s.dlLo, s.dlHi, in, s.tmin)
	var next []linState
	if after {
		if t, ok := m.close(m.passed(s, s.dlLo), in, true, short, r); ok {
			next = append(next, t)
		}
	}
	if before {
		if short {
			if t, ok := m.close(s, in, false, true, r); ok {
				next = append(next, t)
			}
		} else if r == nil {
			next = append(next, s) // NotDue
		} else if r.Outcome == lease.NotDue && r.Round == s.round && r.Bids == len(s.bids) && r.Unleased == s.unleased {
			t := s
			if m.revealDeadline(&t, r.Deadline.UnixNano()) {
				next = append(next, t)
			}
		}
	}
	return next
}

// close closes the open auction (timed: its window has passed; short: its
// bids reached the threshold) and checks the evaluation r the store
// reported, or, with r nil, leaves the grant's fence and expiry unknown.
func (m *linModel) close(s linState, in *linInput, timed, short bool, r *lease.AuctionResult) (linState, bool) {
	round, nb := s.round, len(s.bids)
	if r != nil {
		if r.Round != round || r.Bids != nb || r.TimedOut != timed || r.ShortCircuited != (short && !timed) {
			return s, false
		}
		if !m.revealDeadline(&s, r.Deadline.UnixNano()) {
			return s, false
		}
	}
	s.pend = slices.DeleteFunc(slices.Clone(s.pend), func(p linPend) bool { return p.round == round })
	var best *linOffer
	for i := range s.bids {
		b := &s.bids[i]
		if b.free >= s.minBid && (best == nil || b.free > best.free) {
			best = b
		}
	}
	s.open, s.bids = false, nil
	s.dlLo, s.dlHi, s.dlExact = 0, 0, false
	if best == nil || s.owner != "" {
		s.unleased++
		if r != nil && (r.Outcome != lease.NoWinner || r.Unleased != s.unleased) {
			return s, false
		}
		return s, true
	}
	from := max(in.call, s.tmin)
	s.owner, s.draining, s.ready, s.unleased = best.holder, false, false, 0
	if r == nil {
		s.fence, s.fenceExact = s.fence+1, false
		s.expLo, s.expHi, s.expExact = from+m.ttl, in.ret+m.ttl, false
		return s, true
	}
	g := r.Grant
	if r.Outcome != lease.Granted || g == nil || r.Unleased != 0 || g.Holder != best.holder || g.Item != in.item ||
		g.Round != round || g.Bids != nb || g.Fence <= s.fence {
		return s, false
	}
	x := g.Expiry.UnixNano()
	if !m.within(x, from+m.ttl, in.ret+m.ttl, false) {
		return s, false
	}
	s.fence, s.fenceExact = g.Fence, true
	s.expLo, s.expHi, s.expExact = x, x, true
	return s, true
}
