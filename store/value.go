package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Limits IPNI places on the parts of a [Value]. A store rejects larger ones
// with an error wrapping [ErrInvalidValue].
const (
	// MaxContextIDLen is the longest context ID, in bytes.
	MaxContextIDLen = 64
	// MaxMetadataLen is the longest metadata, in bytes.
	MaxMetadataLen = 1024
)

// Value is what a multihash maps to: the provider that has the content, the
// context (advertisement group) it was published under, and the transport
// metadata that tells a retriever how to fetch it.
//
// A provider has one Value per context ID: all multihashes put under the same
// (ProviderID, ContextID) share one stored record, so the metadata is the same
// for each of them, and the latest write wins.
type Value struct {
	// ProviderID is the peer that serves the content. Required.
	ProviderID peer.ID
	// ContextID groups multihashes published together; 1 to
	// [MaxContextIDLen] bytes.
	ContextID []byte
	// Metadata is the transport metadata, at most [MaxMetadataLen] bytes.
	Metadata []byte
}

// Validate reports whether v may be stored. Errors wrap [ErrInvalidValue] and
// name the offending field.
func (v Value) Validate() error {
	if v.ProviderID == "" {
		return fmt.Errorf("%w: empty provider ID", ErrInvalidValue)
	}
	return ValidateContext(v.ContextID, v.Metadata)
}

// ValidateContext checks a context ID and metadata against the IPNI limits.
func ValidateContext(contextID, metadata []byte) error {
	switch {
	case len(contextID) == 0:
		return fmt.Errorf("%w: empty context ID", ErrInvalidValue)
	case len(contextID) > MaxContextIDLen:
		return fmt.Errorf("%w: context ID is %d bytes, limit %d", ErrInvalidValue, len(contextID), MaxContextIDLen)
	case len(metadata) > MaxMetadataLen:
		return fmt.Errorf("%w: metadata is %d bytes, limit %d", ErrInvalidValue, len(metadata), MaxMetadataLen)
	}
	return nil
}

// Equal reports whether v and o have the same provider, context and metadata.
func (v Value) Equal(o Value) bool {
	return v.ProviderID == o.ProviderID && bytes.Equal(v.ContextID, o.ContextID) && bytes.Equal(v.Metadata, o.Metadata)
}

// SameContext reports whether v and o belong to the same (provider, context).
func (v Value) SameContext(o Value) bool {
	return v.ProviderID == o.ProviderID && bytes.Equal(v.ContextID, o.ContextID)
}

// Clone returns a deep copy of v.
func (v Value) Clone() Value {
	return Value{
		ProviderID: v.ProviderID,
		ContextID:  bytes.Clone(v.ContextID),
		Metadata:   bytes.Clone(v.Metadata),
	}
}

// ValidateMultihash checks that mh is one well-formed multihash (varint code,
// varint length, and exactly that many digest bytes). Errors wrap
// [ErrInvalidMultihash].
func ValidateMultihash(mh multihash.Multihash) error {
	_, n := binary.Uvarint(mh)
	if n <= 0 {
		return fmt.Errorf("%w: bad code varint in %d bytes", ErrInvalidMultihash, len(mh))
	}
	size, k := binary.Uvarint(mh[n:])
	if k <= 0 {
		return fmt.Errorf("%w: bad length varint in %d bytes", ErrInvalidMultihash, len(mh))
	}
	if got := uint64(len(mh) - n - k); got != size {
		return fmt.Errorf("%w: digest is %d bytes, header says %d", ErrInvalidMultihash, got, size)
	}
	return nil
}
