package store

import (
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ProviderInfo is what an indexer knows about one provider: where to reach it,
// who publishes its advertisements, how far ingestion has got, and whether the
// indexer froze while holding it. It is the record behind the IPNI
// /providers API.
type ProviderInfo struct {
	// AddrInfo is the provider's peer ID and retrieval addresses.
	AddrInfo peer.AddrInfo
	// Publisher is the peer that publishes the provider's advertisements.
	Publisher peer.AddrInfo
	// LastAdvertisement is the newest advertisement processed, and
	// LastAdvertisementTime when the indexer processed it (not when it was
	// published).
	LastAdvertisement     cid.Cid
	LastAdvertisementTime time.Time
	// FrozenAt is the last advertisement processed before the indexer froze,
	// and FrozenAtTime when that was; both are zero while not frozen.
	FrozenAt     cid.Cid
	FrozenAtTime time.Time
	// ExtendedProviders lists the other providers that serve this provider's
	// content, chain-wide and per context.
	ExtendedProviders *ExtendedProviders
	// LastError is the last ingestion error for this provider, and
	// LastErrorTime when it happened.
	LastError     string
	LastErrorTime time.Time
}

// ExtendedProviders lists providers that serve content on behalf of another.
type ExtendedProviders struct {
	// Providers apply to every context of the provider.
	Providers []peer.AddrInfo
	// Metadatas holds one metadata per entry of Providers.
	Metadatas [][]byte
	// Contextual apply to one context each.
	Contextual []ContextualExtendedProviders
}

// ContextualExtendedProviders are extended providers for one context ID.
type ContextualExtendedProviders struct {
	// Override makes these replace, not add to, the chain-wide providers.
	Override  bool
	ContextID []byte
	Providers []peer.AddrInfo
	Metadatas [][]byte
}
