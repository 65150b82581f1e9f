package store

import (
	"encoding/json"
	"fmt"
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

// Validate reports whether info may be stored: its peer IDs must be
// well-formed (the provider's is required), and the context IDs and metadata
// of its extended providers within the limits of a [Value]. Errors wrap
// [ErrInvalidValue] and name the offending field.
func (info ProviderInfo) Validate() error {
	if info.AddrInfo.ID == "" {
		return fmt.Errorf("%w: empty provider ID", ErrInvalidValue)
	}
	if err := validatePeerID(info.AddrInfo.ID); err != nil {
		return fmt.Errorf("%w: provider ID: %v", ErrInvalidValue, err)
	}
	if id := info.Publisher.ID; id != "" {
		if err := validatePeerID(id); err != nil {
			return fmt.Errorf("%w: publisher ID: %v", ErrInvalidValue, err)
		}
	}
	ep := info.ExtendedProviders
	if ep == nil {
		return nil
	}
	if err := validateExtended("extended provider", ep.Providers, ep.Metadatas); err != nil {
		return err
	}
	for i, c := range ep.Contextual {
		if len(c.ContextID) > MaxContextIDLen {
			return fmt.Errorf("%w: contextual extended providers %d: context ID is %d bytes, limit %d", ErrInvalidValue, i, len(c.ContextID), MaxContextIDLen)
		}
		if err := validateExtended(fmt.Sprintf("contextual extended providers %d", i), c.Providers, c.Metadatas); err != nil {
			return err
		}
	}
	return nil
}

func validateExtended(what string, providers []peer.AddrInfo, metadatas [][]byte) error {
	for i, p := range providers {
		if err := validatePeerID(p.ID); err != nil {
			return fmt.Errorf("%w: %s %d: peer ID: %v", ErrInvalidValue, what, i, err)
		}
	}
	for i, md := range metadatas {
		if len(md) > MaxMetadataLen {
			return fmt.Errorf("%w: %s metadata %d is %d bytes, limit %d", ErrInvalidValue, what, i, len(md), MaxMetadataLen)
		}
	}
	return nil
}

// validatePeerID checks that id is a non-empty multihash, as every peer ID is.
func validatePeerID(id peer.ID) error {
	if id == "" {
		return peer.ErrEmptyPeerID
	}
	_, err := peer.IDFromBytes([]byte(id))
	return err
}

// providerJSON is the JSON form of a ProviderInfo. CIDs are strings so
// that an undefined CID round-trips as undefined, and an absent publisher
// is left out (peer.AddrInfo cannot decode an empty ID).
type providerJSON struct {
	AddrInfo              peer.AddrInfo
	Publisher             *peer.AddrInfo     `json:",omitempty"`
	LastAdvertisement     string             `json:",omitempty"`
	LastAdvertisementTime time.Time          `json:",omitzero"`
	FrozenAt              string             `json:",omitempty"`
	FrozenAtTime          time.Time          `json:",omitzero"`
	ExtendedProviders     *ExtendedProviders `json:",omitempty"`
	LastError             string             `json:",omitempty"`
	LastErrorTime         time.Time          `json:",omitzero"`
}

// MarshalProviderInfo encodes info as JSON, the form the disk backends
// store and the keyspace-sharded layer (scatter/keyspace) sends; every field
// round-trips through [UnmarshalProviderInfo], zero values included.
func MarshalProviderInfo(info ProviderInfo) ([]byte, error) {
	pj := providerJSON{
		AddrInfo:              info.AddrInfo,
		LastAdvertisementTime: info.LastAdvertisementTime,
		FrozenAtTime:          info.FrozenAtTime,
		ExtendedProviders:     info.ExtendedProviders,
		LastError:             info.LastError,
		LastErrorTime:         info.LastErrorTime,
	}
	if info.Publisher.ID != "" {
		pj.Publisher = &info.Publisher
	}
	if info.LastAdvertisement.Defined() {
		pj.LastAdvertisement = info.LastAdvertisement.String()
	}
	if info.FrozenAt.Defined() {
		pj.FrozenAt = info.FrozenAt.String()
	}
	return json.Marshal(pj)
}

// UnmarshalProviderInfo decodes what [MarshalProviderInfo] encoded.
func UnmarshalProviderInfo(b []byte) (ProviderInfo, error) {
	var pj providerJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		return ProviderInfo{}, fmt.Errorf("provider record: %w", err)
	}
	info := ProviderInfo{
		AddrInfo:              pj.AddrInfo,
		LastAdvertisementTime: pj.LastAdvertisementTime,
		FrozenAtTime:          pj.FrozenAtTime,
		ExtendedProviders:     pj.ExtendedProviders,
		LastError:             pj.LastError,
		LastErrorTime:         pj.LastErrorTime,
	}
	if pj.Publisher != nil {
		info.Publisher = *pj.Publisher
	}
	var err error
	if pj.LastAdvertisement != "" {
		if info.LastAdvertisement, err = cid.Decode(pj.LastAdvertisement); err != nil {
			return info, fmt.Errorf("provider record: last advertisement: %w", err)
		}
	}
	if pj.FrozenAt != "" {
		if info.FrozenAt, err = cid.Decode(pj.FrozenAt); err != nil {
			return info, fmt.Errorf("provider record: frozen at: %w", err)
		}
	}
	return info, nil
}
