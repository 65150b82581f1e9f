package kv

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/indexkit/indexkit/store"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

const (
	prefixMeta     = 0x00
	prefixIndex    = 0x01
	prefixRecord   = 0x02
	prefixProvider = 0x03

	idLen         = 8
	schemaVersion = 1
)

var (
	keyVersion = []byte{prefixMeta, 'v'}
	keyNextID  = []byte{prefixMeta, 'n'}

	errCorrupt = errors.New("kv: corrupt record")
)

func appendIndexKey(dst []byte, mh []byte, id uint64) []byte {
	dst = append(dst, prefixIndex)
	dst = append(dst, mh...)
	return binary.BigEndian.AppendUint64(dst, id)
}

func recordKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixRecord}, id)
}

func providerKey(id peer.ID) []byte {
	return append([]byte{prefixProvider}, id...)
}

// prefixEnd returns the smallest key greater than every key starting with p,
// or nil if there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// encodeRecord writes a value record: uvarint-prefixed provider and context
// ID, then the metadata to the end.
func encodeRecord(v store.Value) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen16+len(v.ProviderID)+len(v.ContextID)+len(v.Metadata))
	b = binary.AppendUvarint(b, uint64(len(v.ProviderID)))
	b = append(b, v.ProviderID...)
	b = binary.AppendUvarint(b, uint64(len(v.ContextID)))
	b = append(b, v.ContextID...)
	return append(b, v.Metadata...)
}

func decodeRecord(b []byte) (store.Value, error) {
	var v store.Value
	p, b, err := readField(b)
	if err != nil {
		return v, err
	}
	c, b, err := readField(b)
	if err != nil {
		return v, err
	}
	v.ProviderID = peer.ID(p)
	v.ContextID = c
	if len(b) > 0 {
		v.Metadata = b
	}
	return v, nil
}

func readField(b []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, errCorrupt
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// providerJSON is the stored form of a ProviderInfo. CIDs are strings so that
// an undefined CID round-trips as undefined.
type providerJSON struct {
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

func encodeProvider(info store.ProviderInfo) ([]byte, error) {
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

func decodeProvider(b []byte) (store.ProviderInfo, error) {
	var pj providerJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		return store.ProviderInfo{}, fmt.Errorf("%w: provider: %v", errCorrupt, err)
	}
	info := store.ProviderInfo{
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
			return info, fmt.Errorf("%w: provider last advertisement: %v", errCorrupt, err)
		}
	}
	if pj.FrozenAt != "" {
		if info.FrozenAt, err = cid.Decode(pj.FrozenAt); err != nil {
			return info, fmt.Errorf("%w: provider frozen at: %v", errCorrupt, err)
		}
	}
	return info, nil
}
