package assigner

// The model's checks: of each proposal, of replication and, once settled, of quiescence.

import (
	"slices"
	"strings"
)

func (m *model) checkProposal(d Decision) {
	m.t.Helper()
	p, to := d.Publisher, d.Indexer
	what := strings.Join(short([]Decision{d}), "")
	switch {
	case d.Kind != KindAssign && d.Kind != KindHandoff:
		m.fail("%s: unknown kind", what)
	case m.deny[p]:
		m.fail("%s: against the policy", what)
	case !m.inPool(to):
		m.fail("%s: not in the pool", what)
	case !m.known[to]:
		m.fail("%s: never polled", what)
	case !m.online[to]:
		m.fail("%s: reported offline", what)
	case m.frozen[to]:
		m.fail("%s: reported frozen", what)
	case m.refused[to][p]:
		m.fail("%s: refused it", what)
	case !m.eligible(to, p):
		m.fail("%s: outside the preset list", what)
	}
	if _, ok := m.world[to].held[p]; ok {
		m.fail("%s: already holds it", what)
	}
	for _, o := range m.outstanding {
		if o.Publisher == p && o.Indexer == to {
			m.fail("%s: a request for it is in flight", what)
		}
	}
	if d.Kind == KindHandoff {
		if !m.inPool(d.From) || !m.frozen[d.From] || d.FrozenID != m.world[d.From].peer {
			m.fail("%s: source not a frozen indexer of the pool", what)
		}
		if _, ok := m.held[d.From][p]; !ok {
			m.fail("%s: source does not hold it", what)
		}
		return
	}
	// A fresh assignment while a handoff is possible and not done.
	for _, f := range m.pool {
		if _, ok := m.held[f][p]; !ok || !m.frozen[f] || !m.online[f] || !m.eligible(f, p) {
			continue
		}
		fp := m.world[f].peer
		done := false
		for _, id := range m.pool {
			if c, ok := m.held[id][p]; ok && c == fp {
				done = true
			}
		}
		for _, o := range m.outstanding {
			if o.Kind == KindHandoff && o.Publisher == p && o.From == f {
				done = true
			}
		}
		if !done {
			m.fail("%s: fresh assignment while %s could hand it off", what, f)
		}
	}
}

func (m *model) checkReplication() {
	m.t.Helper()
	for _, p := range m.pubs {
		if a, _ := m.active(p); a > m.required(p) {
			m.fail("%s has %d active holders, replication %d", name(p), a, m.required(p))
		}
	}
}

// settle brings every indexer online, polls them all and answers every
// request, without losses, then checks liveness.
func (m *model) settle() {
	m.t.Helper()
	m.log("settle")
	lossy := m.lossy
	m.lossy = false
	defer func() { m.lossy = lossy }()
	for range 3 {
		for _, id := range m.pool {
			m.world[id].online = true
			if !m.online[id] {
				m.reportOnline(id)
			}
			m.poll(id)
		}
		for n := 0; len(m.outstanding) > 0; n++ {
			if n > 10000 {
				m.fail("requests do not quiesce: %d outstanding", len(m.outstanding))
			}
			m.deliver(0)
		}
	}
	m.checkQuiescent()
}

func (m *model) checkQuiescent() {
	m.t.Helper()
	snap := m.s.Snapshot()
	if len(snap.Indexers) != len(m.pool) {
		m.fail("snapshot has %d indexers, pool %d", len(snap.Indexers), len(m.pool))
	}
	for i, is := range snap.Indexers {
		w := m.world[m.pool[i]]
		if is.ID != w.id || !is.Known || !is.Online || is.Frozen != w.frozen || len(is.Pending) != 0 || len(is.Uncertain) != 0 {
			m.fail("snapshot of %s: %+v, world %+v", w.id, is, w)
		}
		if got, want := is.Assigned, w.status().Assigned; !slices.Equal(got, want) {
			m.fail("snapshot of %s: assigned %v, world %v", w.id, got, want)
		}
	}
	for _, p := range m.pubs {
		if m.deny[p] {
			continue
		}
		pursued := m.announced[p]
		for _, id := range m.pool {
			if _, ok := m.world[id].held[p]; ok && m.world[id].frozen && m.eligible(id, p) {
				pursued = true
			}
		}
		if !pursued {
			continue
		}
		active, capacity := m.active(p)
		if want := min(m.required(p), capacity); active != want {
			m.fail("liveness: %s has %d active holders, want %d (replication %d, capacity %d)",
				name(p), active, want, m.required(p), capacity)
		}
	}
	for _, p := range m.pubs {
		if ids := m.s.MayHold(p); len(ids) != 0 {
			m.fail("quiescent: %s may be held by %v without the state knowing", name(p), ids)
		}
	}
	if len(snap.Handoffs) != 0 {
		for _, h := range snap.Handoffs {
			if a, c := m.active(h.Publisher); a == c && h.Waiting == ReasonNoCandidate {
				continue // no capacity left
			}
			m.fail("liveness: handoff left: %+v", h)
		}
	}
}

// checkMayHold checks State.MayHold of every publisher against what the
// state was told: the indexers never polled must be listed, and nothing
// but those and the ones where a request failed since their last poll.
func (m *model) checkMayHold() {
	m.t.Helper()
	for _, p := range m.pubs {
		got := m.s.MayHold(p)
		if m.deny[p] {
			if got != nil {
				m.fail("MayHold(%s) = %v for a publisher the policy rejects", name(p), got)
			}
			continue
		}
		inFlight := func(id string) bool {
			return slices.ContainsFunc(m.outstanding, func(d Decision) bool { return d.Publisher == p && d.Indexer == id })
		}
		last := -1
		for _, id := range got {
			i := slices.Index(m.pool, id)
			switch {
			case i < 0:
				m.fail("MayHold(%s) lists %s, not in the pool", name(p), id)
			case i <= last:
				m.fail("MayHold(%s) = %v, not in pool order", name(p), got)
			case !m.eligible(id, p):
				m.fail("MayHold(%s) lists %s, outside its preset list", name(p), id)
			case inFlight(id):
				m.fail("MayHold(%s) lists %s, with a request for it in flight", name(p), id)
			case m.known[id] && !m.failed[id][p]:
				m.fail("MayHold(%s) lists %s, polled since its last failed request", name(p), id)
			}
			last = i
		}
		for _, id := range m.pool {
			if !m.known[id] && m.eligible(id, p) && !inFlight(id) && !slices.Contains(got, id) {
				m.fail("MayHold(%s) = %v, without %s, never polled", name(p), got, id)
			}
		}
	}
}
