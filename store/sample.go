package store

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Sampler is the optional capability of a [Store] that keeps, for every
// (provider, context), the context's whole set of multihashes in ascending
// byte order, so that the IPNI multihash-sampling API (ipni/specs
// IPNI_MH_SAMPLING.md) can answer as the spec says: indices drawn below
// the number of multihashes in the context, each naming a multihash of the
// sorted list. Callers find it by type assertion; every backend of this
// module implements it.
//
// # What the answer is
//
// The population of a context is the set of distinct multihashes that
// Get finds the context on: what was put, minus what was removed, in
// ascending byte order. It does not depend on the order or batching of
// the Puts and Removes that built it, nor on the backend: two stores that
// hold the same context, however they came to, answer the same pick with
// the same multihashes. (The set is keyed on whole multihashes, also in a
// store keyed on digest prefixes.)
//
// Put adds a multihash to the population no earlier than its index entry
// is written, and Remove takes it out no later than its entry is deleted
// (the disk backends do both in the same engine batch), so the population
// holds only multihashes that Get finds, also after a crash (but for an
// engine that loses index writes since the last Flush and keeps the rest,
// store/pebble's WithSortedRuns, until they are put again); repeating a
// Put that a crash cut short completes it as it completes the index.
// RemoveProviderContext and RemoveProvider drop the population with the
// context, and putting the context again starts a new one.
type Sampler interface {
	// Sample counts the population of (provider, contextID), n, calls
	// pick(n) once and returns the multihashes at the positions pick
	// returns (0 to n-1 in ascending byte order), in the order given; the
	// slices are the caller's. pick runs while the store holds the
	// context still, so that n and the positions describe one state; it
	// must not call the store. A position outside [0, n) is an error. It
	// returns an error wrapping [ErrNotFound] if the context is not
	// stored, and one wrapping [ErrNotSampled] if the context was stored
	// before the store kept populations and the store could not rebuild
	// its population (see the backend's documentation).
	Sample(ctx context.Context, provider peer.ID, contextID []byte, pick func(n int) []int) ([]multihash.Multihash, error)
}
