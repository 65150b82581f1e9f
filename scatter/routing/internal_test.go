package routing

import (
	"context"
	"iter"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

// emptyBackend finds nothing and knows no provider.
type emptyBackend struct{}

func (emptyBackend) Find(context.Context, multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(func(find.ProviderResult, error) bool) {}
}

func (emptyBackend) Providers(context.Context) ([]find.ProviderInfo, error) { return nil, nil }

func (emptyBackend) Provider(context.Context, peer.ID) (find.ProviderInfo, error) {
	return find.ProviderInfo{}, find.ErrNotFound
}
