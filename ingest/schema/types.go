package schema

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// Multicodec codes of the two block codecs IPNI uses.
const (
	DagJSON = 0x0129 // dag-json, what the reference publishers write
	DagCBOR = 0x71   // dag-cbor, accepted on decode
)

// Limits enforced on decode and encode.
const (
	// MaxContextIDLen is the longest Advertisement.ContextID, in bytes.
	MaxContextIDLen = 64
	// MaxMetadataLen is the longest Advertisement.Metadata (and
	// ProviderEntry.Metadata), in bytes.
	MaxMetadataLen = 1024
	// MaxBlockSize is the longest block this package decodes. The IPNI
	// specification asks for entry chunks under 4 MB.
	MaxBlockSize = 4 << 20
	// MaxChunkEntries is the most multihashes one EntryChunk may hold. A
	// 4 MiB dag-cbor chunk of sha2-256 multihashes holds about 116,000;
	// reference publishers write 16,384 per chunk by default.
	MaxChunkEntries = 1 << 18
)

// LinkPrefix is the CID prefix of the IPNI link prototype: CIDv1, dag-json,
// sha2-256. [Advertisement.Encode] and [EntryChunk.Encode] produce CIDs with
// it, as the reference publishers do.
var LinkPrefix = cid.Prefix{Version: 1, Codec: DagJSON, MhType: multihash.SHA2_256, MhLength: -1}

// NoEntries is the Entries link of an advertisement that carries no
// multihashes: with IsRm false it updates metadata only, with IsRm true it
// removes a context. It is the CIDv1 raw of sha2-256 of empty input
// truncated to 16 bytes (bafkreehdwdcefgh4dqkjv67uzcmw7oje). Never fetch it.
var NoEntries = func() cid.Cid {
	mh, err := multihash.Sum(nil, multihash.SHA2_256, 16)
	if err != nil {
		panic(err) // sha2-256 is always registered
	}
	return cid.NewCidV1(cid.Raw, mh)
}()

// Advertisement is an IPNI advertisement: one provider's statement that the
// multihashes under Entries are (or, with IsRm, are no longer) retrievable
// under ContextID, with Metadata saying how.
type Advertisement struct {
	// PreviousID links the previous advertisement of the chain; cid.Undef
	// for the first (genesis) advertisement, and then omitted on the wire.
	PreviousID cid.Cid
	// Provider is the peer ID, as text, of the provider of the content.
	Provider string
	// Addresses are the provider's multiaddrs, as text.
	Addresses []string
	// Signature is a libp2p signed envelope; see [Advertisement.Sign].
	Signature []byte
	// Entries links the first EntryChunk of the multihashes (or an IPLD
	// HAMT), or is [NoEntries].
	Entries cid.Cid
	// ContextID keys the advertised content for later updates and
	// removal; at most [MaxContextIDLen] bytes.
	ContextID []byte
	// Metadata says how to retrieve the content (see ingest/metadata); at
	// most [MaxMetadataLen] bytes.
	Metadata []byte
	// IsRm marks a removal of everything under ContextID.
	IsRm bool
	// ExtendedProvider optionally names more providers of the content.
	// An IsRm advertisement must not have one.
	ExtendedProvider *ExtendedProvider
}

// ExtendedProvider lists further providers of an advertisement's content.
type ExtendedProvider struct {
	// Providers must include the advertisement's own Provider when it is
	// not empty.
	Providers []ProviderEntry
	// Override, on an advertisement with a ContextID, replaces the
	// chain-level extended providers for that context instead of adding
	// to them.
	Override bool
}

// ProviderEntry is one extended provider.
type ProviderEntry struct {
	ID        string   // peer ID, as text
	Addresses []string // multiaddrs, as text
	Metadata  []byte   // at most MaxMetadataLen bytes
	Signature []byte   // a libp2p signed envelope by the key of ID
}

// EntryChunk is one link of the chain of multihashes an advertisement's
// Entries points to.
type EntryChunk struct {
	// Entries are the multihashes, as bytes. Decoding does not check that
	// each one is a well-formed multihash; the caller decides what to do
	// with one that is not.
	Entries []multihash.Multihash
	// Next links the next chunk; cid.Undef at the end of the chain, and
	// then omitted on the wire.
	Next cid.Cid
}

// HasEntries reports whether Entries links multihashes to fetch, that is,
// whether it is neither undefined nor [NoEntries].
func (ad *Advertisement) HasEntries() bool {
	return ad.Entries.Defined() && !ad.Entries.Equals(NoEntries)
}

// Validate checks the rules every advertisement must keep: a defined
// Entries link, a Provider that parses as a peer ID, ContextID and Metadata
// within their limits, UTF-8 addresses, no extended providers on an IsRm
// advertisement, and valid extended providers. It does not check the
// signature; see [Advertisement.VerifySignature]. Errors wrap
// [ErrInvalidAdvertisement].
func (ad *Advertisement) Validate() error {
	if !ad.Entries.Defined() {
		return fmt.Errorf("%w: Entries link is undefined (use NoEntries)", ErrInvalidAdvertisement)
	}
	if _, err := peer.Decode(ad.Provider); err != nil {
		return fmt.Errorf("%w: Provider %q is not a peer ID: %v", ErrInvalidAdvertisement, ad.Provider, err)
	}
	if n := len(ad.ContextID); n > MaxContextIDLen {
		return fmt.Errorf("%w: ContextID is %d bytes, limit %d", ErrInvalidAdvertisement, n, MaxContextIDLen)
	}
	if n := len(ad.Metadata); n > MaxMetadataLen {
		return fmt.Errorf("%w: Metadata is %d bytes, limit %d", ErrInvalidAdvertisement, n, MaxMetadataLen)
	}
	if err := checkAddrs("Addresses", ad.Addresses); err != nil {
		return err
	}
	ep := ad.ExtendedProvider
	if ep == nil {
		return nil
	}
	if ad.IsRm {
		return fmt.Errorf("%w: IsRm advertisement has an ExtendedProvider", ErrInvalidAdvertisement)
	}
	for i := range ep.Providers {
		p := &ep.Providers[i]
		if _, err := peer.Decode(p.ID); err != nil {
			return fmt.Errorf("%w: ExtendedProvider.Providers[%d].ID %q is not a peer ID: %v", ErrInvalidAdvertisement, i, p.ID, err)
		}
		if n := len(p.Metadata); n > MaxMetadataLen {
			return fmt.Errorf("%w: ExtendedProvider.Providers[%d].Metadata is %d bytes, limit %d", ErrInvalidAdvertisement, i, n, MaxMetadataLen)
		}
		if err := checkAddrs(fmt.Sprintf("ExtendedProvider.Providers[%d].Addresses", i), p.Addresses); err != nil {
			return err
		}
	}
	return nil
}

func checkAddrs(field string, addrs []string) error {
	for i, a := range addrs {
		if !utf8.ValidString(a) {
			return fmt.Errorf("%w: %s[%d] is not valid UTF-8", ErrInvalidAdvertisement, field, i)
		}
	}
	return nil
}

// Validate checks the limits of an entry chunk. Errors wrap
// [ErrInvalidEntryChunk].
func (ch *EntryChunk) Validate() error {
	if n := len(ch.Entries); n > MaxChunkEntries {
		return fmt.Errorf("%w: %d entries, limit %d", ErrInvalidEntryChunk, n, MaxChunkEntries)
	}
	return nil
}

// Equal reports whether two advertisements have the same fields. A nil and
// an empty slice are equal, as they encode the same.
func (ad *Advertisement) Equal(o *Advertisement) bool {
	if !ad.PreviousID.Equals(o.PreviousID) || !ad.Entries.Equals(o.Entries) ||
		ad.Provider != o.Provider || ad.IsRm != o.IsRm ||
		!slices.Equal(ad.Addresses, o.Addresses) || !bytes.Equal(ad.Signature, o.Signature) ||
		!bytes.Equal(ad.ContextID, o.ContextID) || !bytes.Equal(ad.Metadata, o.Metadata) {
		return false
	}
	a, b := ad.ExtendedProvider, o.ExtendedProvider
	if a == nil || b == nil {
		return a == b
	}
	return a.Override == b.Override && slices.EqualFunc(a.Providers, b.Providers, func(x, y ProviderEntry) bool {
		return x.ID == y.ID && slices.Equal(x.Addresses, y.Addresses) &&
			bytes.Equal(x.Metadata, y.Metadata) && bytes.Equal(x.Signature, y.Signature)
	})
}

// Equal reports whether two entry chunks have the same entries and Next.
func (ch *EntryChunk) Equal(o *EntryChunk) bool {
	return ch.Next.Equals(o.Next) && slices.EqualFunc(ch.Entries, o.Entries, func(a, b multihash.Multihash) bool {
		return bytes.Equal(a, b)
	})
}
