// Package metadata is the codec of IPNI transport metadata: the bytes in an
// advertisement (and in every find result) that say over which protocols a
// provider serves the advertised content.
//
// # Model
//
// A [Metadata] is a set of protocols kept in ascending order of their
// multicodec code, each code at most once. A [Protocol] is one of
//
//   - [Bitswap] (0x0900),
//   - [GraphsyncFilecoinV1] (0x0910), with the PieceCID of the Filecoin
//     piece the content is in and two deal flags,
//   - [IPFSGatewayHTTP] (0x0920),
//   - [FilecoinPieceHTTP] (0x0930),
//   - [Unknown], any other code, whose payload is kept as bytes so that it
//     re-encodes exactly as it came.
//
// [Decode] turns bytes into a Metadata, [Metadata.Encode] turns it back,
// and [New] builds one from protocol values. [PieceCID] pulls the PieceCID
// straight out of raw metadata bytes, for the piece sampler.
//
// # Wire format
//
// Metadata is the concatenation of one entry per protocol, with no count
// and no outer length; [MaxSize] (1024 bytes) bounds the whole.
//
//	code    transport                       entry bytes
//	0x0900  transport-bitswap               80 12                      no payload, no length
//	0x0910  transport-graphsync-filecoinv1  90 12 ‖ dag-cbor map       no length: the map delimits itself
//	0x0920  transport-ipfs-gateway-http     a0 12 00                   length, always 0
//	0x0930  transport-filecoin-piece-http   b0 12 00                   length, always 0
//	other   (Unknown)                       uvarint(code) ‖ uvarint(n) ‖ n bytes
//
// Codes and lengths are unsigned varints in their shortest form (at most 9
// bytes, as go-varint reads them). The graphsync map is
//
//	{"PieceCID": link, "VerifiedDeal": bool, "FastRetrieval": bool}
//
// in dag-cbor: the link is tag 42 around a byte string of 0x00 followed by
// the CID bytes. [Metadata.Encode] writes its keys in dag-cbor's canonical
// order (shortest first: PieceCID, VerifiedDeal, FastRetrieval) and writes
// the protocols in ascending order of code, which is byte for byte what
// go-libipni writes. [Decode] also accepts the keys in another order and the
// protocols in any order; anything it accepts re-encodes to the same number
// of bytes and decodes again to an equal Metadata.
//
// The length prefix of [Unknown] is an assumption, not a rule: IPNI defines
// no generic framing for a transport's payload (graphsync has none), so
// metadata with a future transport that does not use a length prefix cannot
// be split by any decoder that does not know it. go-libipni makes the same
// assumption; both decoders split such bytes alike.
//
// # Differences from go-libipni
//
// The reference decoder (go-libipni metadata.Metadata.UnmarshalBinary, up
// to v0.7.8 at least) hands the graphsync decoder all the bytes that remain,
// and dag-cbor then fails with "unexpected content after end of cbor object"
// whenever graphsync is not the last protocol, e.g. for bitswap + graphsync
// + ipfs-gateway-http, which its own encoder produces. Its offset
// arithmetic is also wrong from the third protocol on: bitswap +
// ipfs-gateway-http + filecoin-piece-http fails with EOF, and an unknown
// protocol + bitswap + ipfs-gateway-http silently loses the gateway. This
// package reads every protocol, graphsync included, in any position.
// Beyond that it is stricter:
//
//   - empty metadata decodes to the empty [Metadata] (the reference
//     rejects it as "at least one transport must be specified");
//   - a repeated code is an error ([ErrDuplicate]; the reference keeps both);
//   - input over [MaxSize] is an error ([ErrTooLarge]);
//   - the graphsync map must be strict dag-cbor: shortest-form heads, no
//     indefinite lengths, exactly the three keys (go-libipni's bindnode
//     decoder, built with go-ipld-prime before v0.24, accepts non-shortest
//     heads);
//   - an Unknown's Payload is the payload alone, not the reference's code ‖
//     length ‖ payload, and the reference's HTTPV1 (code 0x01e0, empty
//     payload, which it encodes to zero bytes) encodes here as e0 03 00.
//
// # Concurrency
//
// A Metadata is immutable once built; all functions are safe for concurrent
// use. Nothing here starts goroutines or holds resources.
//
// # Errors
//
// [Decode] and [PieceCID] fail with errors wrapping [ErrMalformed] (the
// message names the protocol, the problem and its byte offset),
// [ErrDuplicate] or [ErrTooLarge]. [New] fails with errors wrapping
// [ErrInvalidProtocol], [ErrDuplicate] or [ErrTooLarge]. Test them with
// errors.Is. Nothing panics on any input.
package metadata
