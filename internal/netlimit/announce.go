package netlimit

import (
	"fmt"
	"math"
)

// Announce limits of the roles that take announces (the indexer node, the
// assigner, the piece sampler), unless their configuration says
// otherwise.
const (
	// DefaultAnnounceRate is the HTTP announces a second one source IP
	// may send, Burst of it at once.
	DefaultAnnounceRate = 10.0
	// DefaultAnnounceRateExempt are the sources never limited: none. A
	// pool on one host exempts loopback explicitly (a reverse proxy on
	// loopback would otherwise exempt everyone behind it).
	DefaultAnnounceRateExempt = ""
	// DefaultGossipPeerRate is the gossip announces a second delivered
	// from one propagating peer, Burst of it at once: a peer relays
	// every publisher's announces.
	DefaultGossipPeerRate = 100.0
)

// Burst is the burst of a rate limit of perSecond: two seconds' worth,
// at least 1.
func Burst(perSecond float64) int {
	return max(1, int(math.Ceil(2*perSecond)))
}

// NewPublisherBurst is how many announces of publishers not verified yet
// one source address may send at once under an announce rate of perSecond:
// ten seconds' worth, so that a provider starting many peer IDs behind one
// address, or many publishers behind a NAT, are taken in one burst. What
// they cost is bounded by the node's own shares (the ingester's fair
// shares, the assigner's check queue), not by this.
func NewPublisherBurst(perSecond float64) int {
	return max(1, int(math.Ceil(10*perSecond)))
}

// CheckRate returns an error naming name (a flag or a field) if the rate
// v is negative, NaN or infinite (0 is no limit).
func CheckRate(name string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 1) {
		return fmt.Errorf("%s %v: want 0 (no limit) or a positive rate", name, v)
	}
	return nil
}
