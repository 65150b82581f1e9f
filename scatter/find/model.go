package find

import (
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// The JSON shapes of the IPNI find API, field for field as the deployed
// reference (go-libipni find/model) emits and parses them: byte fields are
// base64, CIDs are {"/": "..."} and peer IDs are strings.

// ProviderResult is one provider's answer for a multihash.
type ProviderResult struct {
	// ContextID is the context the multihash was advertised under.
	ContextID []byte `json:"ContextID,omitempty"`
	// Metadata says how to retrieve the content from Provider.
	Metadata []byte `json:"Metadata,omitempty"`
	// Provider is the provider's peer ID and retrieval addresses.
	Provider *peer.AddrInfo `json:"Provider,omitempty"`
}

// MultihashResult is every provider result for one multihash.
type MultihashResult struct {
	Multihash       multihash.Multihash
	ProviderResults []ProviderResult
}

// FindResponse is the body of a JSON find answer.
type FindResponse struct {
	MultihashResults []MultihashResult `json:"MultihashResults,omitempty"`
}

// ProviderInfo is one element of GET /providers and the body of GET
// /providers/{id}.
type ProviderInfo struct {
	AddrInfo              peer.AddrInfo
	LastAdvertisement     cid.Cid            `json:",omitempty"`
	LastAdvertisementTime string             `json:",omitempty"`
	Lag                   int                `json:",omitempty"`
	Publisher             *peer.AddrInfo     `json:",omitempty"`
	IndexCount            uint64             `json:",omitempty"`
	ExtendedProviders     *ExtendedProviders `json:",omitempty"`
	FrozenAt              cid.Cid            `json:",omitempty"`
	FrozenAtTime          string             `json:",omitempty"`
	Inactive              bool               `json:",omitempty"`
	LastError             string             `json:",omitempty"`
	LastErrorTime         string             `json:",omitempty"`
}

// ExtendedProviders lists the providers that serve a provider's content on
// its behalf, chain-wide and per context.
type ExtendedProviders struct {
	Providers  []peer.AddrInfo               `json:",omitempty"`
	Contextual []ContextualExtendedProviders `json:",omitempty"`
	Metadatas  [][]byte                      `json:",omitempty"`
}

// ContextualExtendedProviders are the extended providers of one context.
type ContextualExtendedProviders struct {
	Override  bool
	ContextID string
	Providers []peer.AddrInfo
	Metadatas [][]byte `json:",omitempty"`
}
