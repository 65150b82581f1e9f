// Package schema holds the IPNI advertisement and entry-chunk types, their
// dag-json and dag-cbor codecs, and the libp2p signed envelopes that sign
// advertisements, all wire-compatible with the deployed reference
// (ipni/go-libipni ingest/schema).
//
// # Model
//
// A provider publishes a chain of [Advertisement] blocks, newest first,
// each linking the previous one by PreviousID (cid.Undef for the first).
// An advertisement's Entries links the first [EntryChunk] of a chain of
// multihashes (or an IPLD HAMT, which this package does not decode), or is
// the [NoEntries] sentinel. Every advertisement also updates the provider's
// addresses. What an advertisement does with its ContextID:
//
//	IsRm   Entries            effect
//	false  NoEntries          update the metadata of ContextID only
//	false  an EntryChunk      index the entries under ContextID, with Metadata
//	true   any                remove everything under ContextID
//	                          (Metadata and Entries are ignored)
//
// An IsRm advertisement must not carry an [ExtendedProvider].
//
// # Codecs
//
// [DecodeAdvertisement] and [DecodeEntryChunk] take a block and the CID it
// was fetched under. They check the block's size ([MaxBlockSize]), that its
// bytes hash to the CID, and decode with the codec the CID names
// ([DagJSON] or [DagCBOR]); then they validate: ContextID at most
// [MaxContextIDLen] bytes, Metadata at most [MaxMetadataLen], a Provider
// (and extended-provider IDs) that parse as peer IDs, UTF-8 addresses, no
// ExtendedProvider on an IsRm advertisement, at most [MaxChunkEntries]
// entries. Entries are not checked to be well-formed multihashes.
//
// [Advertisement.Encode] and [EntryChunk.Encode] write dag-json with CIDs of
// [LinkPrefix] (CIDv1, dag-json, sha2-256: "baguqeera…"), byte for byte as
// go-libipni does: map keys in bytewise order, bytes as
// {"/":{"bytes":"<base64, unpadded>"}}, links as {"/":"<cid>"}, absent
// optional fields omitted, nil and empty lists alike written as []. They
// validate first, so they never produce a block the decoders reject.
// EncodeAs writes dag-cbor as well. Decoding uses go-ipld-prime's codecs
// with the reference schema, so it accepts exactly what the reference
// accepts (before validation). Entry chunks in the canonical form the
// encoders write take a fast path that parses the bytes directly, without
// building IPLD nodes; anything else goes to go-ipld-prime, which decides,
// so the fast path changes speed, never what is accepted (the fuzz tests
// compare the two). [AppendEntryChunk] is DecodeEntryChunk for walkers of
// long chains: it appends to a slice the caller reuses, lets dag-cbor
// entries alias the block, and skips the hash when the fetcher checked it.
//
// # Signatures
//
// Signature is a libp2p signed envelope (go-libp2p core/record) in domain
// [SignatureDomain], payload type [AdSignatureType]. Its payload is the
// sha2-256 multihash of
//
//	PreviousID bytes (none for a genesis ad) ‖ Entries bytes ‖ Provider ‖
//	each address ‖ Metadata ‖ IsRm as one byte (0 or 1)
//
// [Advertisement.Sign] makes it; [Advertisement.VerifySignature] checks it
// and returns the signer's peer ID, which may be a publisher signing for
// the provider: whether that is allowed is the caller's policy. Early
// publishers signed a legacy payload, the same bytes wrapped unhashed in a
// sha2-256 multihash header; a payload that is not 34 bytes long is
// checked in that form. Ed25519, secp256k1, ECDSA and RSA keys all work.
//
// Known property of the IPNI signature, kept for compatibility: the
// payload does not cover ContextID (nor the ExtendedProvider). Anyone who
// can alter an ad in transit can move its entries to another context, or
// make an IsRm ad remove another context, and the signature still
// verifies. Transport integrity (the ad's CID, linked from the signed
// next ad or a signed head) is what protects ContextID.
//
// Each extended provider signs, with payload type
// [ExtendedProviderSignatureType], the sha2-256 multihash of
//
//	PreviousID ‖ Entries ‖ ad Provider ‖ ad ContextID ‖ its ID ‖
//	each of its addresses ‖ its Metadata ‖ Override as one byte
//
// [Advertisement.SignWithExtendedProviders] makes these (and the ad
// signature). The ad's own Provider must be among the extended providers.
// Unlike the reference, VerifySignature also checks that each extended
// provider's envelope was made by the key of that provider's ID, so that a
// publisher cannot claim other peers without their keys.
//
// # Concurrency
//
// The functions are safe for concurrent use. A value is not: do not change
// an Advertisement or EntryChunk while another goroutine encodes, signs or
// verifies it. Decoded values do not alias the input block.
//
// # Errors
//
// Decoding fails with errors wrapping [ErrBlockTooLarge],
// [ErrUnsupportedCodec], [ErrHashMismatch], [ErrMalformed],
// [ErrInvalidAdvertisement] or [ErrInvalidEntryChunk]; verification with
// [ErrNoSignature] (an unsigned ad) or [ErrInvalidSignature]. Messages name
// the field or rule at fault. Test them with errors.Is.
package schema
