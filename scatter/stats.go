package scatter

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// GatherHooks are called as a [Gather] works, to feed metrics. Each may be
// nil, and each may be called from several goroutines at once; a hook must
// not block. Backends are identified by their index in the slice given to
// [NewGather].
type GatherHooks struct {
	// OnStateChange is called when a backend's circuit breaker changes
	// state.
	OnStateChange func(backend int, from, to BreakerState)
	// OnBackendDone is called when a backend has finished its part of a
	// Find, Providers or Provider call: d is how long it took, err is nil
	// if it answered (results or "not found"). It is not called for a
	// backend skipped because its breaker is open.
	OnBackendDone func(backend int, d time.Duration, err error)
	// OnDisagreement is called when backend yields a result for a
	// (provider, context) already yielded by another backend for mh, with
	// other metadata. The first result is kept.
	OnDisagreement func(mh multihash.Multihash, provider peer.ID, contextID []byte, backend int)
}

// GatherStats is a snapshot of a Gather's counters, from [Gather.Stats].
type GatherStats struct {
	// Queries counts Find calls; Partial those that ended in a
	// *PartialError; Disagreements the results dropped as duplicates of
	// one with other metadata.
	Queries, Partial, Disagreements uint64
	// CacheHits and CacheMisses count Find calls answered from the cache
	// or not; CacheEntries is its size (all zero without a cache).
	CacheHits, CacheMisses uint64
	CacheEntries           int
	// Backends holds one entry per backend, in order.
	Backends []BackendStats
}

// BackendStats are one backend's counters in [GatherStats].
type BackendStats struct {
	Name  string
	State BreakerState
	// Requests counts the requests sent to the backend, Failures those
	// that failed (TimedOut of them by running out of time), and Skipped
	// the requests not sent because its breaker was open. Requests the
	// caller abandoned are in Requests only.
	Requests, Failures, TimedOut, Skipped uint64
}

// Stats returns a snapshot of the Gather's counters.
func (g *Gather) Stats() GatherStats {
	s := GatherStats{
		Queries:       g.queries.Load(),
		Partial:       g.partial.Load(),
		Disagreements: g.disagreements.Load(),
		Backends:      make([]BackendStats, len(g.backends)),
	}
	if g.cache != nil {
		s.CacheHits, s.CacheMisses, s.CacheEntries = g.cache.stats()
	}
	for i := range g.backends {
		c := &g.counters[i]
		b := BackendStats{
			Name:     g.names[i],
			Requests: c.requests.Load(),
			Failures: c.failures.Load(),
			TimedOut: c.timeouts.Load(),
			Skipped:  c.skipped.Load(),
		}
		if g.breakers != nil {
			b.State = g.breakers[i].current()
		}
		s.Backends[i] = b
	}
	return s
}
