package store

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// SampleKeep is the most multihashes a [Sampler] keeps per (provider,
// context): the size of the population the IPNI sampling API draws from.
const SampleKeep = 64

// Sampler is the optional capability of a [Store] that keeps, for every
// (provider, context), a bounded sample of the context's multihashes, so
// that the IPNI multihash-sampling API can be answered without a reverse
// index from a context to all of its multihashes. Callers find it by type
// assertion; every backend of this module implements it.
//
// # What is kept
//
// Each stored multihash gets a 64-bit hash under a secret key that the store
// draws when it is created (and keeps, if it persists anything). A context
// keeps the multihashes whose hash is below its threshold, at most
// [SampleKeep] of them: the threshold starts above every hash and, when a
// Put would take the sample over SampleKeep, drops to the smallest hash it
// leaves out. This is a bottom-k sample: a uniformly random subset of the
// context's multihashes, the same whatever the order and batching of the
// Puts that built it, that a provider cannot steer because it does not know
// the key. A context of at most SampleKeep multihashes keeps all of them.
//
// Put adds a multihash to the sample no earlier than its index entry is
// written, and Remove takes it out no later than its entry is deleted (the
// disk backends do both in the same engine batch), so the sample holds only
// multihashes that Get finds, also after a crash; repeating a
// Put that a crash cut short completes the sample as it completes the index.
// Remove does not refill the sample: what is left stays a uniform sample of
// the remaining multihashes, only smaller. RemoveProviderContext and
// RemoveProvider drop the sample with the context, and putting the context
// again starts a new one.
type Sampler interface {
	// Sample returns the kept multihashes of (provider, contextID) in
	// ascending byte order, at most [SampleKeep] of them; the slice is the
	// caller's. It returns an error wrapping [ErrNotFound] if the context is
	// not stored, and one wrapping [ErrNotSampled] if the context was
	// stored before the store kept samples.
	Sample(ctx context.Context, provider peer.ID, contextID []byte) ([]multihash.Multihash, error)
}
