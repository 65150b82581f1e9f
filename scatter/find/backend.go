package find

import (
	"context"
	"iter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Backend is one source of find answers: a local store (see
// [NewStoreBackend]), a remote IPNI find API (see [NewClient]), or a
// fan-out over many backends (scatter's Gather), which is itself a Backend.
//
// A Backend reports "not found" by yielding no result and no error; an error
// means it could not answer, which a fan-out treats differently from "not
// found" (a pool where some indexers failed must not answer 404). Errors
// wrap [ErrNotFound] only from Provider.
type Backend interface {
	// Find yields the provider results for mh as they become available,
	// stopping when the caller stops iterating or ctx is done. An error is
	// yielded once, last, with a zero ProviderResult.
	Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[ProviderResult, error]
	// Providers returns every provider record the backend knows.
	Providers(ctx context.Context) ([]ProviderInfo, error)
	// Provider returns one provider record, or an error wrapping
	// [ErrNotFound].
	Provider(ctx context.Context, id peer.ID) (ProviderInfo, error)
}
