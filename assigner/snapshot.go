package assigner

import (
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Snapshot is the state for operators (the service's GET /indexers and
// GET /assignments), JSON-friendly. Lists are sorted: indexers in pool
// order, publishers by peer ID.
type Snapshot struct {
	Replication       int
	PresetReplication int
	Indexers          []IndexerSnapshot
	Publishers        []PublisherSnapshot
	// Handoffs are the incomplete handoffs: in flight (To set), or
	// waiting for a candidate or for the frozen indexer to come online.
	Handoffs []HandoffSnapshot
}

// IndexerSnapshot is one indexer of the pool.
type IndexerSnapshot struct {
	ID     string
	PeerID peer.ID `json:",omitempty"`
	// Known: polled since it joined the state, so its assignments are
	// known.
	Known, Online, Frozen bool
	Assigned              []Assignment `json:",omitempty"`
	// Pending are the proposals to it awaiting a result.
	Pending   []PendingSnapshot `json:",omitempty"`
	Preferred []peer.ID         `json:",omitempty"`
	Preset    []peer.ID         `json:",omitempty"`
	// Refused are publishers it refused; Uncertain those a failed request
	// may have assigned to it. Both last until its status changes or its
	// next poll.
	Refused   []peer.ID `json:",omitempty"`
	Uncertain []peer.ID `json:",omitempty"`
}

// PendingSnapshot is a proposal awaiting its result: an assign, or a
// handoff from From.
type PendingSnapshot struct {
	Publisher peer.ID
	From      string `json:",omitempty"`
}

// PublisherSnapshot is one publisher the state knows: announced, held or
// proposed.
type PublisherSnapshot struct {
	Publisher peer.ID
	Preset    bool
	Required  int
	Announced bool
	// Assignments are the known indexers holding it; only those not
	// Frozen count toward Required.
	Assignments []PublisherAssignment `json:",omitempty"`
	// Pending are the indexers it is proposed to.
	Pending []string `json:",omitempty"`
	Waiting Reason   `json:",omitempty"`
}

// PublisherAssignment is one indexer holding a publisher.
type PublisherAssignment struct {
	Indexer string
	Frozen  bool `json:",omitempty"`
	// Continued is the frozen indexer (peer ID) the holder took the
	// publisher over from.
	Continued peer.ID `json:",omitempty"`
}

// HandoffSnapshot is an incomplete handoff of Publisher from the frozen
// indexer From.
type HandoffSnapshot struct {
	Publisher peer.ID
	From      string
	FrozenID  peer.ID `json:",omitempty"`
	// To is the receiver of a handoff in flight; empty while it waits.
	To      string `json:",omitempty"`
	Waiting Reason `json:",omitempty"`
}

// Snapshot returns a copy of the state; it shares nothing with it.
func (s *State) Snapshot() Snapshot {
	snap := Snapshot{Replication: s.replication, PresetReplication: s.presetReplication}
	pubs := map[peer.ID]bool{}
	for p := range s.pubs {
		pubs[p] = true
	}
	for _, ix := range s.indexers {
		is := IndexerSnapshot{
			ID: ix.id, PeerID: ix.peerID, Known: ix.known, Online: ix.online, Frozen: ix.frozen,
			Preferred: sortedKeys(ix.preferred), Preset: sortedKeys(ix.preset),
			Refused: sortedKeys(ix.refused), Uncertain: sortedKeys(ix.uncertain),
		}
		for _, p := range sortedKeys(ix.assigned) {
			is.Assigned = append(is.Assigned, Assignment{Publisher: p, Continued: ix.assigned[p]})
			pubs[p] = true
		}
		for _, p := range sortedKeys(ix.pending) {
			op := ix.pending[p]
			is.Pending = append(is.Pending, PendingSnapshot{Publisher: p, From: op.from})
			pubs[p] = true
			if op.from != "" {
				snap.Handoffs = append(snap.Handoffs, HandoffSnapshot{Publisher: p, From: op.from, FrozenID: op.frozenID, To: ix.id})
			}
		}
		snap.Indexers = append(snap.Indexers, is)
	}
	for _, p := range sortedKeys(pubs) {
		preset := s.presetList(p)
		ps := PublisherSnapshot{Publisher: p, Preset: preset, Required: s.required(preset)}
		if pb := s.pubs[p]; pb != nil {
			ps.Announced, ps.Waiting = pb.announced, pb.waiting
		}
		for _, ix := range s.indexers {
			if c, ok := ix.assigned[p]; ok {
				ps.Assignments = append(ps.Assignments, PublisherAssignment{Indexer: ix.id, Frozen: ix.frozen, Continued: c})
			}
			if _, ok := ix.pending[p]; ok {
				ps.Pending = append(ps.Pending, ix.id)
			}
		}
		snap.Publishers = append(snap.Publishers, ps)
		if !s.Allowed(p) {
			continue
		}
		a := s.assess(p)
		for i := 0; i < a.required-len(a.active)-a.pending && i < len(a.sources); i++ {
			src := a.sources[i]
			snap.Handoffs = append(snap.Handoffs, HandoffSnapshot{Publisher: p, From: src.id, FrozenID: src.peerID, Waiting: ps.Waiting})
		}
	}
	slices.SortStableFunc(snap.Handoffs, func(x, y HandoffSnapshot) int {
		if x.Publisher != y.Publisher {
			if x.Publisher < y.Publisher {
				return -1
			}
			return 1
		}
		return 0
	})
	return snap
}

func sortedKeys[V any](m map[peer.ID]V) []peer.ID {
	if len(m) == 0 {
		return nil
	}
	out := make([]peer.ID, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
