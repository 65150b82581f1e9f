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
//   - State.MayHold lists, in pool order, every eligible indexer of the
//     pool never polled and without a request for the publisher in flight,
//     and besides those only eligible ones where a request for it failed
//     since their last poll; it is not empty while the publisher waits for
//     ReasonUnknown (so polling it is what an announce can do);
//
// and at quiescence (every indexer of the pool online and polled, every
// request answered): the state agrees with the world, and every pursued
// publisher (announced since the assigner started, or held by a frozen
// indexer) has min(replication, capacity) unfrozen holders, and no
// indexer may hold a publisher without the state knowing.

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
	failed    map[string]map[peer.ID]bool // a request failed since the last poll
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
	m.failed = map[string]map[peer.ID]bool{}
	for _, id := range m.pool {
		m.online[id] = true
		m.held[id] = map[peer.ID]peer.ID{}
		m.refused[id] = map[peer.ID]bool{}
		m.failed[id] = map[peer.ID]bool{}
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
			if d.Reason == ReasonUnknown && len(m.s.MayHold(d.Publisher)) == 0 {
				m.fail("%s waits for %s, and no indexer may hold it", name(d.Publisher), d.Reason)
			}
			continue
		}
		m.checkProposal(d)
		m.outstanding = append(m.outstanding, d)
	}
	m.checkReplication()
	m.checkMayHold()
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
