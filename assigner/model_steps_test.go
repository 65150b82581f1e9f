package assigner

// The model's steps: announces, polls, reports, deliveries, restarts and pool changes, and the random step.

import (
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Events.

func (m *model) announce(p peer.ID) {
	m.log("announce %s", name(p))
	if !m.deny[p] {
		m.announced[p] = true
	}
	m.take(m.s.Announce(p), nil)
}

func (m *model) poll(id string) {
	w := m.world[id]
	if !w.online {
		m.log("poll %s: offline", id)
		m.online[id] = false
		m.take(m.s.Offline(id))
		return
	}
	st := w.status()
	m.log("poll %s: frozen %v, %d assigned", id, st.Frozen, len(st.Assigned))
	if !m.known[id] || m.frozen[id] != w.frozen {
		clear(m.refused[id])
	}
	m.known[id], m.online[id], m.frozen[id] = true, true, w.frozen
	m.held[id] = maps(w.held)
	clear(m.failed[id])
	m.take(m.s.Polled(id, st))
}

func (m *model) reportOnline(id string) {
	m.log("online %s", id)
	if !m.online[id] {
		clear(m.refused[id])
	}
	m.online[id] = true
	m.take(m.s.Online(id))
}

func (m *model) reportOffline(id string) {
	m.log("offline %s", id)
	m.online[id] = false
	m.take(m.s.Offline(id))
}

// execute runs request d against the world and returns its outcome.
func (m *model) execute(d Decision) Outcome {
	to := m.world[d.Indexer]
	lose := func() bool { return m.lossy && m.r.IntN(8) == 0 }
	switch {
	case !to.online:
		return Failed
	case to.frozen:
		return Refused
	}
	if _, ok := to.held[d.Publisher]; ok {
		return AlreadyHeld
	}
	if lose() { // failed before taking effect
		return Failed
	}
	var cont peer.ID
	if d.Kind == KindHandoff {
		from := m.world[d.From]
		if !from.online {
			return Failed
		}
		if _, ok := from.held[d.Publisher]; !ok {
			return NoSource
		}
		cont = from.peer
	}
	to.held[d.Publisher] = cont
	if lose() { // took effect, the answer was lost
		return Failed
	}
	return Done
}

func (m *model) deliver(i int) {
	d := m.outstanding[i]
	m.outstanding = slices.Delete(m.outstanding, i, i+1)
	o := m.execute(d)
	m.log("result of %s: %s", strings.Join(short([]Decision{d}), ""), o)
	if m.inPool(d.Indexer) {
		switch o {
		case Done, AlreadyHeld:
			c := m.world[d.Indexer].held[d.Publisher]
			if _, ok := m.held[d.Indexer][d.Publisher]; !ok || o == Done {
				m.held[d.Indexer][d.Publisher] = c
				if o == AlreadyHeld {
					m.held[d.Indexer][d.Publisher] = ""
				}
			}
		case Refused:
			m.refused[d.Indexer][d.Publisher] = true
		case Failed:
			m.failed[d.Indexer][d.Publisher] = true
		}
	}
	if d.Kind == KindAssign {
		m.take(m.s.AssignResult(d.Indexer, d.Publisher, o), nil)
	} else {
		m.take(m.s.HandoffResult(d.From, d.Indexer, d.Publisher, o), nil)
	}
}

func (m *model) restart() {
	m.log("restart")
	// Requests of the old process land, or not, before the new one polls.
	for _, d := range m.outstanding {
		m.execute(d)
	}
	m.outstanding = nil
	m.start()
}

func (m *model) addIndexer() {
	w := m.newIndexer()
	m.log("add %s", w.id)
	m.online[w.id] = true
	m.held[w.id] = map[peer.ID]peer.ID{}
	m.refused[w.id] = map[peer.ID]bool{}
	m.failed[w.id] = map[peer.ID]bool{}
	m.take(m.s.AddIndexer(IndexerConfig{ID: w.id, PresetPublishers: w.preset}))
}

func (m *model) removeIndexer(id string) {
	m.log("remove %s", id)
	m.pool = slices.DeleteFunc(m.pool, func(x string) bool { return x == id })
	delete(m.known, id)
	m.take(m.s.RemoveIndexer(id))
}

func (m *model) pick() string { return m.pool[m.r.IntN(len(m.pool))] }

// step runs one random event.
func (m *model) step() {
	r := m.r
	switch n := r.IntN(100); {
	case n < 20:
		m.announce(m.pubs[r.IntN(len(m.pubs))])
	case n < 40:
		m.poll(m.pick())
	case n < 70:
		if len(m.outstanding) > 0 {
			m.deliver(r.IntN(len(m.outstanding)))
		}
	case n < 78:
		id := m.pick()
		w := m.world[id]
		w.online = !w.online
		m.log("world: %s online=%v", id, w.online)
		if r.IntN(2) == 0 {
			if w.online {
				m.reportOnline(id)
			} else {
				m.reportOffline(id)
			}
		}
	case n < 82:
		id := m.pick()
		m.log("world: %s freezes", id)
		m.world[id].frozen = true
	case n < 85:
		m.reportOffline(m.pick()) // a timeout: not necessarily true
	case n < 87:
		if len(m.world) < 8 {
			m.addIndexer()
		}
	case n < 89:
		if len(m.pool) > 1 {
			m.removeIndexer(m.pick())
		}
	case n < 91:
		m.restart()
	default:
		m.reportOnline(m.pick())
	}
}
