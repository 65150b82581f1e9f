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
