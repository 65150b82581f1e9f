package kv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

const (
	prefixMeta     = 0x00
	prefixIndex    = 0x01
	prefixRecord   = 0x02
	prefixProvider = 0x03
	// prefixSample began the bounded sample of a record in schema version
	// 2; the upgrade to version 3 deletes those keys.
	prefixSample = 0x04
	// prefixPopulation begins a population entry (see population.go).
	prefixPopulation = 0x06

	idLen         = 8
	schemaVersion = 3
)

// IndexPrefix is the first byte of every index key, and of no other key:
// an engine that handles index writes apart (store/pebble's sorted runs)
// tells them by it. Index keys lie in [IndexPrefix, IndexPrefix+1).
const IndexPrefix = prefixIndex

// indexSuffixLen is the length of what follows 0x01‖mh‖0x00 in an [Entries]
// index key: the record ID and a closing 0x09, which keeps the key from
// ending in '/'.
const indexSuffixLen = idLen + 1

var (
	keyVersion = []byte{prefixMeta, 'v', 0}
	keyNextID  = []byte{prefixMeta, 'n', 0}
	// keySampler held the sample hash key of schema version 2; the
	// upgrade to version 3 deletes it.
	keySampler = []byte{prefixMeta, 's', 0}
	// keyPopFrom holds the first record ID with a population (8 bytes,
	// big-endian); absent, 0.
	keyPopFrom = []byte{prefixMeta, 'p', 0}

	errCorrupt = errors.New("kv: corrupt record")
)

// appendIndexPrefix appends 0x01‖mh‖0x00, the prefix of mh's entries.
func appendIndexPrefix(dst []byte, mh []byte) []byte {
	dst = append(dst, prefixIndex)
	dst = append(dst, mh...)
	return append(dst, 0)
}

func appendIndexKey(dst []byte, mh []byte, id uint64) []byte {
	dst = appendIndexPrefix(dst, mh)
	dst = binary.BigEndian.AppendUint64(dst, id)
	return append(dst, indexSuffixLen)
}

// parseIndexKey splits an index entry into multihash and record ID.
func parseIndexKey(key []byte) (mh []byte, id uint64, ok bool) {
	if len(key) < 1+1+indexSuffixLen+1 || key[0] != prefixIndex || key[len(key)-1] != indexSuffixLen {
		return nil, 0, false
	}
	p := len(key) - indexSuffixLen
	return key[1 : p-1], binary.BigEndian.Uint64(key[p:]), true
}

func recordKey(id uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{prefixRecord}, id)
	return append(k, 0)
}

func providerKey(id peer.ID) []byte {
	k := append([]byte{prefixProvider}, id...)
	return append(k, 0)
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

func encodeProvider(info store.ProviderInfo) ([]byte, error) {
	b, err := store.MarshalProviderInfo(info)
	if err != nil {
		return nil, err
	}
	// Peer IDs are stored as text, which parses back only for well-formed
	// IDs: refuse a record that could not be read, rather than store one
	// that Provider reports corrupt and that stops Providers.
	if _, err := decodeProvider(b); err != nil {
		return nil, fmt.Errorf("%w: provider record would not read back: %v", store.ErrInvalidValue, err)
	}
	return b, nil
}

func decodeProvider(b []byte) (store.ProviderInfo, error) {
	info, err := store.UnmarshalProviderInfo(b)
	if err != nil {
		return info, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return info, nil
}
