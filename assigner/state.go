package assigner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// State is the assigner's pure state machine: events in, decisions out.
// It does no I/O, starts no goroutines and reads no clock; the same events
// give the same decisions. It is not safe for concurrent use: the service
// that drives it serialises the events.
type State struct {
	replication       int
	presetReplication int
	allow             func(peer.ID) bool

	indexers []*indexer          // pool order: the tie-break
	byID     map[string]*indexer // the same, by ID
	pubs     map[peer.ID]*publisher
}

// indexer is what the state knows of one indexer of the pool.
type indexer struct {
	id     string
	preset map[peer.ID]bool // publishers preset to it

	known  bool // polled since it joined the state: its assignments are known
	online bool
	frozen bool
	peerID peer.ID

	assigned  map[peer.ID]peer.ID // publisher -> Continued ("" if none)
	preferred map[peer.ID]bool
	pending   map[peer.ID]pendingOp // proposals to it awaiting a result
	uncertain map[peer.ID]bool      // a failed request may have taken effect
	refused   map[peer.ID]bool      // refused until its status changes
	noSource  map[peer.ID]bool      // frozen: has nothing to hand off for these
}

// pendingOp is an assign (from == "") or a handoff from the frozen
// indexer from (peer ID frozenID) awaiting its result.
type pendingOp struct {
	from     string
	frozenID peer.ID
}

// publisher is what the state keeps per publisher beyond the indexers'
// lists.
type publisher struct {
	announced bool   // announced since the state started: pursued without a new announce
	waiting   Reason // last reason reported; "" when not waiting
}

// NewState validates cfg and returns a state in which every indexer is
// unknown (not yet polled) and nothing is assigned.
func NewState(cfg Config) (*State, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	s := &State{
		replication:       cfg.Replication,
		presetReplication: cfg.PresetReplication,
		allow:             cfg.Allow,
		byID:              make(map[string]*indexer, len(cfg.Indexers)),
		pubs:              make(map[peer.ID]*publisher),
	}
	for _, ic := range cfg.Indexers {
		s.add(ic)
	}
	return s, nil
}

func (s *State) add(ic IndexerConfig) {
	ix := &indexer{
		id:        ic.ID,
		preset:    make(map[peer.ID]bool, len(ic.PresetPublishers)),
		assigned:  map[peer.ID]peer.ID{},
		preferred: map[peer.ID]bool{},
		pending:   map[peer.ID]pendingOp{},
		uncertain: map[peer.ID]bool{},
		refused:   map[peer.ID]bool{},
		noSource:  map[peer.ID]bool{},
	}
	for _, p := range ic.PresetPublishers {
		ix.preset[p] = true
	}
	s.indexers = append(s.indexers, ix)
	s.byID[ix.id] = ix
}

// Allowed reports whether the policy allows publisher p. The service
// answers an announce of a publisher it rejects with 403.
func (s *State) Allowed(p peer.ID) bool {
	return p != "" && (s.allow == nil || s.allow(p))
}

// Announce is an announce from publisher p (over HTTP or gossip). The
// publisher is pursued from now on: if it is short of its replication the
// state proposes assignments (or handoffs from a frozen indexer holding
// it), now and whenever later events make it possible. A publisher the
// policy rejects gives nothing.
func (s *State) Announce(p peer.ID) []Decision {
	if !s.Allowed(p) {
		return nil
	}
	s.pub(p).announced = true
	return s.evaluate(nil, p, true)
}

// Polled reports the status of indexer id, fetched at startup or by a
// periodic poll. The indexer becomes known and online; its frozen state,
// peer ID, assignments and preferred publishers are replaced by st (a
// pending proposal stays pending until its result). Its refusals are
// forgotten when its peer ID or frozen state changed. Then every pursued
// publisher is re-evaluated: those of an indexer that is now frozen get
// handoffs.
//
// st must reflect every result already reported for the indexer: the
// service does not report a poll that was in flight while an assign or
// handoff request to the same indexer was.
func (s *State) Polled(id string, st IndexerStatus) ([]Decision, error) {
	ix := s.byID[id]
	if ix == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndexer, id)
	}
	if st.ID == "" {
		return nil, fmt.Errorf("%w: %q: no peer ID", ErrInvalidStatus, id)
	}
	if !ix.known || ix.frozen != st.Frozen || ix.peerID != st.ID {
		clear(ix.refused)
		clear(ix.noSource)
	}
	ix.known, ix.online, ix.frozen, ix.peerID = true, true, st.Frozen, st.ID
	clear(ix.assigned)
	for _, a := range st.Assigned {
		if a.Publisher != "" {
			ix.assigned[a.Publisher] = a.Continued
		}
	}
	clear(ix.preferred)
	for _, p := range st.Preferred {
		ix.preferred[p] = true
	}
	clear(ix.uncertain)
	return s.evaluateAll(), nil
}

// Offline reports that indexer id cannot be reached. It is no longer a
// candidate; what it is known to hold still counts (an offline indexer
// keeps its publishers), and an indexer never polled stays unknown.
// Results of requests in flight to it are still expected.
func (s *State) Offline(id string) ([]Decision, error) {
	ix := s.byID[id]
	if ix == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndexer, id)
	}
	ix.online = false
	return nil, nil
}

// Online reports that indexer id can be reached again. A known indexer is
// a candidate again, its refusals are forgotten (it may have restarted),
// and waiting publishers, incomplete handoffs first among them, are
// re-evaluated. An unknown indexer stays unknown until [State.Polled].
func (s *State) Online(id string) ([]Decision, error) {
	ix := s.byID[id]
	if ix == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndexer, id)
	}
	if !ix.online {
		clear(ix.refused)
		clear(ix.noSource)
	}
	ix.online = true
	return s.evaluateAll(), nil
}

// AddIndexer adds an indexer to the end of the pool, unknown until it is
// polled (while it is unknown, publishers it could hold are not assigned
// further: [ReasonUnknown]).
func (s *State) AddIndexer(ic IndexerConfig) ([]Decision, error) {
	if err := ic.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if s.byID[ic.ID] != nil {
		return nil, fmt.Errorf("%w: duplicate ID %q", ErrInvalidConfig, ic.ID)
	}
	s.add(ic)
	return s.evaluateAll(), nil
}

// RemoveIndexer removes indexer id from the pool. Its assignments stop
// counting, so its pursued publishers are assigned elsewhere; those a
// frozen indexer had handed off are not (their receivers hold them).
// Results of requests in flight to it are ignored; handoffs in flight
// from it stay pending.
func (s *State) RemoveIndexer(id string) ([]Decision, error) {
	ix := s.byID[id]
	if ix == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndexer, id)
	}
	delete(s.byID, id)
	s.indexers = slices.DeleteFunc(s.indexers, func(x *indexer) bool { return x == ix })
	return s.evaluateAll(), nil
}

// AssignResult reports the outcome of the assign decision of publisher p
// to indexer id, and re-evaluates p (a refused or failed assignment is
// proposed to the next candidate). A result with no pending decision
// (a duplicate, or for a removed indexer) is still a fact: Done and
// AlreadyHeld record p as held by a known indexer, Failed makes it
// uncertain.
func (s *State) AssignResult(id string, p peer.ID, o Outcome) []Decision {
	ix := s.byID[id]
	if ix == nil || p == "" {
		return nil
	}
	delete(ix.pending, p)
	s.result(ix, p, o, "")
	return s.reevaluate(p)
}

// HandoffResult reports the outcome of the handoff decision of publisher
// p from frozen indexer from to indexer to, and re-evaluates p. On Done
// the receiver holds p with Continued set to the frozen indexer's peer ID,
// which completes the handoff; on NoSource p is no longer handed off from
// that indexer.
func (s *State) HandoffResult(from, to string, p peer.ID, o Outcome) []Decision {
	ix := s.byID[to]
	if ix == nil || p == "" {
		return nil
	}
	op, ok := ix.pending[p]
	if !ok || op.from != from {
		op = pendingOp{from: from}
		if f := s.byID[from]; f != nil {
			op.frozenID = f.peerID
		}
	}
	delete(ix.pending, p)
	if o == NoSource {
		if f := s.byID[from]; f != nil {
			f.noSource[p] = true
		}
		return s.reevaluate(p)
	}
	s.result(ix, p, o, op.frozenID)
	return s.reevaluate(p)
}

// reevaluate evaluates p after a result, if p is pursued.
func (s *State) reevaluate(p peer.ID) []Decision {
	if pb := s.pubs[p]; pb != nil && pb.announced {
		return s.evaluate(nil, p, false)
	}
	for _, ix := range s.indexers {
		if _, held := ix.assigned[p]; held && ix.known && ix.frozen {
			return s.evaluate(nil, p, false)
		}
	}
	return nil
}

func (s *State) result(ix *indexer, p peer.ID, o Outcome, continued peer.ID) {
	switch o {
	case Done:
		if ix.known {
			ix.assigned[p] = continued
		}
	case AlreadyHeld:
		if _, held := ix.assigned[p]; !held && ix.known {
			ix.assigned[p] = ""
		}
	case Refused:
		ix.refused[p] = true
	case Failed:
		if _, held := ix.assigned[p]; !held && ix.known {
			ix.uncertain[p] = true
		}
	}
}

func (s *State) pub(p peer.ID) *publisher {
	pb := s.pubs[p]
	if pb == nil {
		pb = &publisher{}
		s.pubs[p] = pb
	}
	return pb
}

// pursued lists, sorted, the publishers the state works on without an
// announce: those announced, and those held by a known frozen indexer.
func (s *State) pursued() []peer.ID {
	set := make(map[peer.ID]bool)
	for p, pb := range s.pubs {
		if pb.announced {
			set[p] = true
		}
	}
	for _, ix := range s.indexers {
		if ix.known && ix.frozen {
			for p := range ix.assigned {
				set[p] = true
			}
		}
	}
	out := make([]peer.ID, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (s *State) evaluateAll() []Decision {
	var out []Decision
	for _, p := range s.pursued() {
		out = s.evaluate(out, p, false)
	}
	return out
}

// presetList reports whether p is preset: some indexer lists it.
func (s *State) presetList(p peer.ID) bool {
	for _, ix := range s.indexers {
		if ix.preset[p] {
			return true
		}
	}
	return false
}

func (s *State) required(preset bool) int {
	if preset {
		return s.presetReplication
	}
	return s.replication
}

// assessment is where publisher p stands.
type assessment struct {
	required int
	active   []*indexer // known, unfrozen holders (online or not)
	frozen   []*indexer // known, frozen holders
	pending  int        // proposals awaiting a result
	maybe    int        // indexers that may hold p: unknown, or uncertain
	// sources are frozen holders whose handoff of p is neither complete
	// (no indexer holds p with Continued = their peer ID), nor in flight,
	// nor impossible (NoSource).
	sources []*indexer
	cands   []*indexer // ordered best first
}

func (s *State) assess(p peer.ID) assessment {
	preset := s.presetList(p)
	a := assessment{required: s.required(preset)}
	eligible := func(ix *indexer) bool { return !preset || ix.preset[p] }

	// Handoffs complete or in flight, by frozen peer ID and indexer ID.
	continued := map[peer.ID]bool{}
	inFlight := map[string]bool{}
	for _, ix := range s.indexers {
		if c, ok := ix.assigned[p]; ok && c != "" && ix.known {
			continued[c] = true
		}
		if op, ok := ix.pending[p]; ok && op.from != "" {
			inFlight[op.from] = true
		}
	}

	for _, ix := range s.indexers {
		if !eligible(ix) {
			continue
		}
		if _, ok := ix.pending[p]; ok {
			a.pending++
			continue
		}
		if !ix.known || ix.uncertain[p] {
			a.maybe++
			continue
		}
		if _, held := ix.assigned[p]; held {
			if !ix.frozen {
				a.active = append(a.active, ix)
				continue
			}
			a.frozen = append(a.frozen, ix)
			if (ix.peerID == "" || !continued[ix.peerID]) && !inFlight[ix.id] && !ix.noSource[p] {
				a.sources = append(a.sources, ix)
			}
			continue
		}
		if ix.online && !ix.frozen && !ix.refused[p] {
			a.cands = append(a.cands, ix)
		}
	}
	slices.SortStableFunc(a.cands, func(x, y *indexer) int {
		if px, py := x.preferred[p], y.preferred[p]; px != py {
			if px {
				return -1
			}
			return 1
		}
		return x.load() - y.load() // stable: pool order breaks ties
	})
	return a
}

// load is the number of publishers assigned to ix or proposed to it.
func (ix *indexer) load() int { return len(ix.assigned) + len(ix.pending) }

// evaluate appends to out the decisions that bring p toward its
// replication, records them as pending, and reports a change of p's
// waiting reason (or any waiting reason when direct).
func (s *State) evaluate(out []Decision, p peer.ID, direct bool) []Decision {
	if !s.Allowed(p) {
		return out
	}
	a := s.assess(p)
	short := a.required - len(a.active) - a.pending - a.maybe
	noCand, reserved := false, false
	for ; short > 0; short-- {
		var src *indexer
		if len(a.sources) > 0 {
			src, a.sources = a.sources[0], a.sources[1:]
			if !src.online {
				// Keep the slot for this source's handoff.
				reserved = true
				continue
			}
		}
		if len(a.cands) == 0 {
			noCand = true
			break
		}
		to := a.cands[0]
		a.cands = a.cands[1:]
		a.pending++
		if src != nil {
			op := pendingOp{from: src.id, frozenID: src.peerID}
			to.pending[p] = op
			out = append(out, Decision{Kind: KindHandoff, Publisher: p, Indexer: to.id, From: src.id, FrozenID: src.peerID})
		} else {
			to.pending[p] = pendingOp{}
			out = append(out, Decision{Kind: KindAssign, Publisher: p, Indexer: to.id})
		}
	}

	var reason Reason
	if len(a.active)+a.pending < a.required {
		switch {
		case noCand:
			reason = ReasonNoCandidate
		case reserved:
			reason = ReasonSourceOffline
		default:
			reason = ReasonUnknown
		}
	}
	pb := s.pubs[p]
	if pb == nil {
		if reason == "" {
			return out
		}
		pb = s.pub(p)
	}
	if reason != "" && (direct || reason != pb.waiting) {
		out = append(out, Decision{Kind: KindRetryLater, Publisher: p, Reason: reason})
	}
	pb.waiting = reason
	if reason == "" && !pb.announced {
		delete(s.pubs, p)
	}
	return out
}

// String is a one-line summary for logs.
func (s *State) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "assigner.State{replication %d/%d", s.replication, s.presetReplication)
	for _, ix := range s.indexers {
		fmt.Fprintf(&b, " %s:%d", ix.id, len(ix.assigned))
	}
	b.WriteString("}")
	return b.String()
}
