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
