package store

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Version tells whether what a read saw still holds: Current reports
// false once a write that may have changed it has landed, and from then
// on. It is cheap (a few atomic loads) and safe for concurrent use.
type Version interface {
	Current() bool
}

// Versioned is implemented by stores that can say exactly when what a read
// saw may have changed, so that a caller can keep what it derives from a
// read (an encoded find answer, a provider record) for as long as it
// holds and not a moment longer. store/pebble and store/leveldb implement
// it; scatter/find's StoreBackend and Handler use it to keep answers
// ready.
type Versioned interface {
	// GetVersion is Get, with the version of its answer. The version
	// stops being current once any write that could change the answer
	// has landed: a Put or Remove of mh, a new metadata or the removal of
	// one of the answer's contexts, the removal of its provider, a bulk
	// load or a range removal. It may stop for other reasons too (the
	// store forgot what it needed to tell), never later.
	GetVersion(ctx context.Context, mh multihash.Multihash) ([]Value, Version, error)
	// ProviderVersion is Provider, with the version of the parts of the
	// record a find answer shows: the addresses and the extended
	// providers. A PutProvider that changes them, or DeleteProvider,
	// ends it; one that changes only the other fields (the last
	// advertisement, say) need not.
	ProviderVersion(ctx context.Context, id peer.ID) (ProviderInfo, Version, error)
}
