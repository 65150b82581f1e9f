package assigner

import "github.com/libp2p/go-libp2p/core/peer"

// Holders returns the IDs of the known indexers that hold publisher p
// (online or not, frozen or not), in pool order: those a service forwards
// p's later announces to. A frozen holder is included: it still walks the
// publisher's chain, storing no new multihashes but applying removals and
// metadata updates to what it holds (the seed's "Publisher data spread
// across frozen and active indexers"). It changes nothing.
func (s *State) Holders(p peer.ID) []string {
	var out []string
	for _, ix := range s.indexers {
		if _, ok := ix.assigned[p]; ok && ix.known {
			out = append(out, ix.id)
		}
	}
	return out
}

// Known reports whether the state knows publisher p from something other
// than a stranger's word: p was announced since the state started (and
// the service accepted the announce), is preset to an indexer, is held by
// an indexer, or has a request pending or in doubt on one. A service
// verifies the announces of a publisher it does not know before it
// reports them ([State.Announce]). It changes nothing.
func (s *State) Known(p peer.ID) bool {
	if pb := s.pubs[p]; pb != nil && pb.announced {
		return true
	}
	for _, ix := range s.indexers {
		if _, ok := ix.assigned[p]; ok {
			return true
		}
		if _, ok := ix.pending[p]; ok || ix.preset[p] || ix.uncertain[p] {
			return true
		}
	}
	return false
}

// MayHold returns the IDs of the indexers that may hold publisher p
// without the state knowing, in pool order: those eligible for p (in its
// preset list, when it has one) that were never polled, or where a
// request for p failed since their last poll, and have no request for p
// pending. They are the maybe term of p's count (see the package
// documentation, section Counting): while p waits for [ReasonUnknown],
// polling them ([State.Polled]) is what lets it go on. A service polls
// them when an announce of a waiting p arrives, rather than wait for its
// next periodic poll. Nil for a publisher the policy rejects. It changes
// nothing.
func (s *State) MayHold(p peer.ID) []string {
	if !s.Allowed(p) {
		return nil
	}
	preset := s.presetList(p)
	var out []string
	for _, ix := range s.indexers {
		if preset && !ix.preset[p] {
			continue
		}
		if _, ok := ix.pending[p]; ok {
			continue
		}
		if !ix.known || ix.uncertain[p] {
			out = append(out, ix.id)
		}
	}
	return out
}
