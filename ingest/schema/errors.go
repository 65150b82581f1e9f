package schema

import "errors"

var (
	// ErrHashMismatch is wrapped by decode errors when a block's bytes do
	// not hash to the multihash of the CID it was fetched under.
	ErrHashMismatch = errors.New("schema: hash mismatch")

	// ErrUnsupportedCodec is wrapped by decode errors when a CID names a
	// codec other than dag-json and dag-cbor, or a hash function this
	// package cannot compute.
	ErrUnsupportedCodec = errors.New("schema: unsupported codec")

	// ErrBlockTooLarge is wrapped when a block is longer than
	// [MaxBlockSize].
	ErrBlockTooLarge = errors.New("schema: block too large")

	// ErrMalformed is wrapped when a block does not decode as the codec
	// its CID names, or does not fit the IPNI schema (missing, unknown or
	// mistyped fields).
	ErrMalformed = errors.New("schema: malformed block")

	// ErrInvalidAdvertisement is wrapped when an advertisement fits the
	// schema but breaks a rule of IPNI (oversize ContextID or Metadata, a
	// Provider that is not a peer ID, an IsRm ad with extended providers,
	// an undefined Entries link, ...). The message names the rule.
	ErrInvalidAdvertisement = errors.New("schema: invalid advertisement")

	// ErrInvalidEntryChunk is wrapped when an entry chunk fits the schema
	// but breaks a limit (more than [MaxChunkEntries] entries).
	ErrInvalidEntryChunk = errors.New("schema: invalid entry chunk")

	// ErrNoSignature is returned by [Advertisement.VerifySignature] for an
	// advertisement with an empty Signature. Callers that accept unsigned
	// ads (tests, trusted publishers) test for it with errors.Is.
	ErrNoSignature = errors.New("schema: advertisement not signed")

	// ErrInvalidSignature is wrapped by every other verification failure:
	// an envelope that does not parse or whose signature is wrong, a wrong
	// domain or payload type, a payload that does not match the
	// advertisement, an extended provider signed by a key that is not its
	// ID. The message names the failure.
	ErrInvalidSignature = errors.New("schema: invalid signature")
)
