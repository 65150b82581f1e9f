package shard

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/store"
)

// providerWire is a provider record on the wire: JSON, with CIDs as
// strings and an absent publisher left out, so that zero fields
// round-trip as zero.
type providerWire struct {
	AddrInfo              peer.AddrInfo
	Publisher             *peer.AddrInfo           `json:",omitempty"`
	LastAdvertisement     string                   `json:",omitempty"`
	LastAdvertisementTime time.Time                `json:",omitzero"`
	FrozenAt              string                   `json:",omitempty"`
	FrozenAtTime          time.Time                `json:",omitzero"`
	ExtendedProviders     *store.ExtendedProviders `json:",omitempty"`
	LastError             string                   `json:",omitempty"`
	LastErrorTime         time.Time                `json:",omitzero"`
}

func encodeProvider(info *store.ProviderInfo) ([]byte, error) {
	w := providerWire{
		AddrInfo:              info.AddrInfo,
		LastAdvertisementTime: info.LastAdvertisementTime,
		FrozenAtTime:          info.FrozenAtTime,
		ExtendedProviders:     info.ExtendedProviders,
		LastError:             info.LastError,
		LastErrorTime:         info.LastErrorTime,
	}
	if info.Publisher.ID != "" {
		w.Publisher = &info.Publisher
	}
	if info.LastAdvertisement.Defined() {
		w.LastAdvertisement = info.LastAdvertisement.String()
	}
	if info.FrozenAt.Defined() {
		w.FrozenAt = info.FrozenAt.String()
	}
	return json.Marshal(w)
}

func decodeProvider(b []byte) (*store.ProviderInfo, error) {
	var w providerWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	info := &store.ProviderInfo{
		AddrInfo:              w.AddrInfo,
		LastAdvertisementTime: w.LastAdvertisementTime,
		FrozenAtTime:          w.FrozenAtTime,
		ExtendedProviders:     w.ExtendedProviders,
		LastError:             w.LastError,
		LastErrorTime:         w.LastErrorTime,
	}
	if w.Publisher != nil {
		info.Publisher = *w.Publisher
	}
	var err error
	if w.LastAdvertisement != "" {
		if info.LastAdvertisement, err = cid.Decode(w.LastAdvertisement); err != nil {
			return nil, fmt.Errorf("last advertisement: %w", err)
		}
	}
	if w.FrozenAt != "" {
		if info.FrozenAt, err = cid.Decode(w.FrozenAt); err != nil {
			return nil, fmt.Errorf("frozen at: %w", err)
		}
	}
	return info, nil
}
