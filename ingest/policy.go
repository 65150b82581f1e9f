package ingest

import (
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Policy says which publishers are ingested. The zero Policy allows every
// publisher.
type Policy struct {
	// Allow, when not empty, lists the only publishers allowed.
	Allow []peer.ID
	// Deny lists publishers never allowed; it wins over Allow.
	Deny []peer.ID
}

// Allowed reports whether publisher may be ingested.
func (p Policy) Allowed(publisher peer.ID) bool {
	if slices.Contains(p.Deny, publisher) {
		return false
	}
	return len(p.Allow) == 0 || slices.Contains(p.Allow, publisher)
}

func (p Policy) clone() Policy {
	return Policy{Allow: slices.Clone(p.Allow), Deny: slices.Clone(p.Deny)}
}
