package assigner

import "github.com/libp2p/go-libp2p/core/peer"

// Holders returns the IDs of the known, unfrozen indexers that hold
// publisher p (online or not), in pool order: those a service forwards
// p's later announces to. It changes nothing.
func (s *State) Holders(p peer.ID) []string {
	var out []string
	for _, ix := range s.indexers {
		if _, ok := ix.assigned[p]; ok && ix.known && !ix.frozen {
			out = append(out, ix.id)
		}
	}
	return out
}
