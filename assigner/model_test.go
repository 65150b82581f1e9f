package assigner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The model test runs random sequences of events against a State and a
// simulated world, in the manner of golang.org/x/sync's syncmap
// map_reference_test.go: the world is the trivially correct reference
// (which indexer really holds which publisher, which are frozen and
// online), every decision the State makes is executed against it, and
// invariants are checked after every step:
//
//   - replication is never exceeded: no publisher has more unfrozen
//     holders in the pool (within its preset list, if it has one) than its
//     replication;
//   - no assign or handoff goes to an indexer outside the pool, not
//     polled, reported offline or frozen, refusing the publisher, holding
//     it, or with a request for it in flight; none goes against the
//     policy or the preset list; a handoff comes from an indexer reported
//     frozen that holds the publisher;
//   - no fresh assignment is made while a handoff of the publisher from a
//     frozen indexer is possible and not done;
//
// and at quiescence (every indexer of the pool online and polled, every
// request answered): the state agrees with the world, and every pursued
// publisher (announced since the assigner started, or held by a frozen
// indexer) has min(replication, capacity) unfrozen holders.

// chooser is the source of choices: math/rand/v2, or fuzz bytes.
type chooser interface {
	IntN(n int) int
}

type wIndexer struct {
	id        string
	peer      peer.ID
	preset    []peer.ID
	online    bool
	frozen    bool
	held      map[peer.ID]peer.ID // publisher -> Continued
	preferred []peer.ID
}

func (w *wIndexer) status() IndexerStatus {
	st := IndexerStatus{ID: w.peer, Frozen: w.frozen, Preferred: slices.Clone(w.preferred)}
	for _, p := range sortedKeys(w.held) {
		st.Assigned = append(st.Assigned, Assignment{Publisher: p, Continued: w.held[p]})
	}
	return st
}

type model struct {
	t testing.TB
	r chooser

	rep, presetRep int
	pubs           []peer.ID
	deny           map[peer.ID]bool
	world          map[string]*wIndexer // every indexer ever, by ID
	pool           []string             // the pool, in the state's order
	nextID         int

	s           *State
	outstanding []Decision
	lossy       bool // requests may fail, with or without effect
	trace       []string

	// What the state has been told since it started.
	announced map[peer.ID]bool
	known     map[string]bool
	online    map[string]bool
	frozen    map[string]bool
	held      map[string]map[peer.ID]peer.ID
	refused   map[string]map[peer.ID]bool
}

func newModel(t testing.TB, r chooser) *model {
	m := &model{
		t: t, r: r,
		rep:       1 + r.IntN(3),
		presetRep: 1 + r.IntN(2),
		deny:      map[peer.ID]bool{},
		world:     map[string]*wIndexer{},
		lossy:     true,
	}
	nIx, nPub := 2+r.IntN(4), 3+r.IntN(6)
	for i := range nPub {
		p := pid(fmt.Sprintf("P%d", i+1))
		m.pubs = append(m.pubs, p)
		if r.IntN(6) == 0 {
			m.deny[p] = true
		}
	}
	for range nIx {
		m.newIndexer()
	}
	for _, p := range m.pubs {
		if r.IntN(4) == 0 {
			for _, id := range m.pool {
				if r.IntN(2) == 0 {
					m.world[id].preset = append(m.world[id].preset, p)
				}
			}
		}
	}
	for _, id := range m.pool {
		w := m.world[id]
		w.frozen = r.IntN(4) == 0
		w.online = r.IntN(4) != 0
	}
	// Initial holdings within the rules: at most the replication of
	// unfrozen eligible holders; frozen holders, some handed off already.
	for _, p := range m.pubs {
		k := r.IntN(m.required(p) + 1)
		var active []*wIndexer
		for _, id := range m.pool {
			w := m.world[id]
			if !m.eligible(id, p) {
				continue
			}
			if w.frozen {
				if r.IntN(3) == 0 {
					w.held[p] = ""
				}
				continue
			}
			if len(active) < k && r.IntN(2) == 0 {
				w.held[p] = ""
				active = append(active, w)
			}
		}
		for _, id := range m.pool {
			w := m.world[id]
			if _, ok := w.held[p]; ok && w.frozen && len(active) > 0 && r.IntN(2) == 0 {
				a := active[r.IntN(len(active))]
				a.held[p] = w.peer
			}
		}
	}
	m.start()
	return m
}

func (m *model) newIndexer() *wIndexer {
	id := fmt.Sprintf("i%d", m.nextID)
	m.nextID++
	w := &wIndexer{id: id, peer: peerOf(id), online: true, held: map[peer.ID]peer.ID{}}
	for _, p := range m.pubs {
		if m.r.IntN(5) == 0 {
			w.preferred = append(w.preferred, p)
		}
	}
	m.world[id] = w
	m.pool = append(m.pool, id)
	return w
}

// start (re)starts the assigner: a new State from the pool's config.
func (m *model) start() {
	cfg := Config{Replication: m.rep, PresetReplication: m.presetRep, Allow: func(p peer.ID) bool { return !m.deny[p] }}
	for _, id := range m.pool {
		cfg.Indexers = append(cfg.Indexers, IndexerConfig{ID: id, PresetPublishers: m.world[id].preset})
	}
	s, err := NewState(cfg)
	if err != nil {
		m.t.Fatalf("NewState: %v", err)
	}
	m.s = s
	m.announced = map[peer.ID]bool{}
	m.known, m.online, m.frozen = map[string]bool{}, map[string]bool{}, map[string]bool{}
	m.held, m.refused = map[string]map[peer.ID]peer.ID{}, map[string]map[peer.ID]bool{}
	for _, id := range m.pool {
		m.online[id] = true
		m.held[id] = map[peer.ID]peer.ID{}
		m.refused[id] = map[peer.ID]bool{}
	}
}

// The reference rules, from the world and the config alone.

func (m *model) inPool(id string) bool { return slices.Contains(m.pool, id) }

func (m *model) preset(p peer.ID) bool {
	for _, id := range m.pool {
		if slices.Contains(m.world[id].preset, p) {
			return true
		}
	}
	return false
}

func (m *model) eligible(id string, p peer.ID) bool {
	return !m.preset(p) || slices.Contains(m.world[id].preset, p)
}

func (m *model) required(p peer.ID) int {
	if m.preset(p) {
		return m.presetRep
	}
	return m.rep
}

// active counts the pool's unfrozen eligible holders of p; capacity the
// pool's unfrozen eligible indexers.
func (m *model) active(p peer.ID) (active, capacity int) {
	for _, id := range m.pool {
		w := m.world[id]
		if w.frozen || !m.eligible(id, p) {
			continue
		}
		capacity++
		if _, ok := w.held[p]; ok {
			active++
		}
	}
	return active, capacity
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	tail := m.trace
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	m.t.Fatalf("%s\nconfig: replication %d/%d, pool %v\nlast events:\n  %s",
		fmt.Sprintf(format, args...), m.rep, m.presetRep, m.pool, strings.Join(tail, "\n  "))
}

func (m *model) log(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, args...))
}

// take checks the decisions of one event and queues the requests.
func (m *model) take(ds []Decision, err error) {
	m.t.Helper()
	if err != nil {
		m.fail("unexpected error: %v", err)
	}
	for _, d := range ds {
		m.log("  -> %s", strings.Join(short([]Decision{d}), ""))
		if d.Kind == KindRetryLater {
			if d.Reason == "" {
				m.fail("retry without a reason: %+v", d)
			}
			continue
		}
		m.checkProposal(d)
		m.outstanding = append(m.outstanding, d)
	}
	m.checkReplication()
}

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
	if len(snap.Handoffs) != 0 {
		for _, h := range snap.Handoffs {
			if a, c := m.active(h.Publisher); a == c && h.Waiting == ReasonNoCandidate {
				continue // no capacity left
			}
			m.fail("liveness: handoff left: %+v", h)
		}
	}
}

func maps(m map[peer.ID]peer.ID) map[peer.ID]peer.ID {
	out := make(map[peer.ID]peer.ID, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func runModel(t testing.TB, r chooser, steps int) {
	m := newModel(t, r)
	for i := range steps {
		m.step()
		if i%50 == 49 {
			m.settle()
		}
	}
	m.settle()
}

// TestModel runs 250 seeded sequences of 300 events (about a second with
// -race), stopping early past a time budget on a slow machine. A failure
// names its seed; the subtest reruns alone with -run TestModel/<seed>.
func TestModel(t *testing.T) {
	const (
		seeds  = 250
		steps  = 300
		budget = 2 * time.Second
	)
	start := time.Now()
	n := 0
	for seed := range uint64(seeds) {
		if time.Since(start) > budget {
			break
		}
		n++
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runModel(t, rand.New(rand.NewPCG(seed, 0x5eed)), steps)
		})
		if t.Failed() {
			return
		}
	}
	t.Logf("%d seeds of %d events in %v", n, steps, time.Since(start))
}
