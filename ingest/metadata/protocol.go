package metadata

import (
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-varint"
)

// The multicodec codes of the transports this package knows. Any other code
// decodes to an [Unknown].
const (
	CodeBitswap             uint64 = 0x0900 // transport-bitswap
	CodeGraphsyncFilecoinV1 uint64 = 0x0910 // transport-graphsync-filecoinv1
	CodeIPFSGatewayHTTP     uint64 = 0x0920 // transport-ipfs-gateway-http
	CodeFilecoinPieceHTTP   uint64 = 0x0930 // transport-filecoin-piece-http
)

// MaxSize is the largest encoded metadata, in bytes, that [Decode] accepts
// and [New] builds: the limit IPNI indexers put on an advertisement's
// metadata.
const MaxSize = 1024

// maxCode is the largest protocol code a varint of go-varint can carry.
const maxCode = varint.MaxValueUvarint63

// A Protocol is one retrieval transport of a [Metadata]: one of [Bitswap],
// [GraphsyncFilecoinV1], [IPFSGatewayHTTP], [FilecoinPieceHTTP] or
// [Unknown]. The set is closed; a transport this package does not know is
// carried by [Unknown], which keeps its bytes.
type Protocol interface {
	// ID returns the multicodec code of the transport, the first varint of
	// its wire form.
	ID() uint64

	// String names the transport (its multicodec name) and its payload.
	String() string

	// appendTo appends the wire form, code first.
	appendTo(dst []byte) []byte

	// check reports why the value cannot be encoded, wrapping
	// ErrInvalidProtocol.
	check() error
}

// Bitswap is the transport-bitswap protocol (0x0900). Its wire form is the
// code alone, 80 12, with no payload and no length.
type Bitswap struct{}

// ID returns [CodeBitswap].
func (Bitswap) ID() uint64 { return CodeBitswap }

func (Bitswap) String() string { return "transport-bitswap" }

func (Bitswap) appendTo(dst []byte) []byte { return binary.AppendUvarint(dst, CodeBitswap) }

func (Bitswap) check() error { return nil }

// GraphsyncFilecoinV1 is the transport-graphsync-filecoinv1 protocol
// (0x0910) of Filecoin storage providers. Its payload is one dag-cbor map
// with no length prefix:
//
//	{"PieceCID": link, "VerifiedDeal": bool, "FastRetrieval": bool}
//
// encoded with dag-cbor's canonical key order (shortest key first).
type GraphsyncFilecoinV1 struct {
	// PieceCID identifies the Filecoin piece the content is in. It must be
	// defined; its codec is not checked (piece CIDs are normally
	// fil-commitment-unsealed with sha2-256-trunc254-padded, but published
	// metadata carries others).
	PieceCID cid.Cid
	// VerifiedDeal says whether the deal is a verified (Filecoin Plus) deal.
	VerifiedDeal bool
	// FastRetrieval says whether the provider claims to keep an unsealed
	// copy.
	FastRetrieval bool
}

// ID returns [CodeGraphsyncFilecoinV1].
func (GraphsyncFilecoinV1) ID() uint64 { return CodeGraphsyncFilecoinV1 }

func (g GraphsyncFilecoinV1) String() string {
	return fmt.Sprintf("transport-graphsync-filecoinv1{PieceCID: %s, VerifiedDeal: %t, FastRetrieval: %t}",
		g.PieceCID, g.VerifiedDeal, g.FastRetrieval)
}

func (g GraphsyncFilecoinV1) appendTo(dst []byte) []byte {
	return appendGraphsyncMap(binary.AppendUvarint(dst, CodeGraphsyncFilecoinV1), g)
}

func (g GraphsyncFilecoinV1) check() error {
	if !g.PieceCID.Defined() {
		return fmt.Errorf("%w: transport-graphsync-filecoinv1 without a PieceCID", ErrInvalidProtocol)
	}
	return nil
}

// IPFSGatewayHTTP is the transport-ipfs-gateway-http protocol (0x0920): the
// provider serves the content over the IPFS trustless gateway HTTP API. Its
// wire form is the code and a zero length, a0 12 00.
type IPFSGatewayHTTP struct{}

// ID returns [CodeIPFSGatewayHTTP].
func (IPFSGatewayHTTP) ID() uint64 { return CodeIPFSGatewayHTTP }

func (IPFSGatewayHTTP) String() string { return "transport-ipfs-gateway-http" }

func (IPFSGatewayHTTP) appendTo(dst []byte) []byte {
	return append(binary.AppendUvarint(dst, CodeIPFSGatewayHTTP), 0)
}

func (IPFSGatewayHTTP) check() error { return nil }

// FilecoinPieceHTTP is the transport-filecoin-piece-http protocol (0x0930):
// the provider serves whole pieces over HTTP. Its wire form is the code and a
// zero length, b0 12 00.
type FilecoinPieceHTTP struct{}

// ID returns [CodeFilecoinPieceHTTP].
func (FilecoinPieceHTTP) ID() uint64 { return CodeFilecoinPieceHTTP }

func (FilecoinPieceHTTP) String() string { return "transport-filecoin-piece-http" }

func (FilecoinPieceHTTP) appendTo(dst []byte) []byte {
	return append(binary.AppendUvarint(dst, CodeFilecoinPieceHTTP), 0)
}

func (FilecoinPieceHTTP) check() error { return nil }

// Unknown is a protocol whose code this package does not know. Its wire
// form is assumed to be uvarint(Code) ‖ uvarint(len(Payload)) ‖ Payload.
//
// That length prefix is an assumption, not a rule of the format: IPNI
// defines no generic framing, so a future transport could use another one
// (as graphsync does). go-libipni makes the same assumption for the codes it
// does not know, so both decoders split such metadata alike, and an Unknown
// re-encodes to the bytes it was decoded from.
type Unknown struct {
	// Code is the multicodec code; it must not be one of the known codes.
	Code uint64
	// Payload is the payload without its length prefix. A Metadata owns its
	// payloads: do not modify one obtained from a Metadata.
	Payload []byte
}

// ID returns u.Code.
func (u Unknown) ID() uint64 { return u.Code }

func (u Unknown) String() string {
	return fmt.Sprintf("unknown{Code: %#x, Payload: %d bytes}", u.Code, len(u.Payload))
}

func (u Unknown) appendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, u.Code)
	dst = binary.AppendUvarint(dst, uint64(len(u.Payload)))
	return append(dst, u.Payload...)
}

func (u Unknown) check() error {
	switch {
	case isKnown(u.Code):
		return fmt.Errorf("%w: unknown protocol with the known code %#x: use the protocol's own type",
			ErrInvalidProtocol, u.Code)
	case u.Code > maxCode:
		return fmt.Errorf("%w: protocol code %#x is larger than 2^63-1", ErrInvalidProtocol, u.Code)
	}
	return nil
}

func isKnown(code uint64) bool {
	switch code {
	case CodeBitswap, CodeGraphsyncFilecoinV1, CodeIPFSGatewayHTTP, CodeFilecoinPieceHTTP:
		return true
	}
	return false
}

// codeName names a code in error messages.
func codeName(code uint64) string {
	switch code {
	case CodeBitswap:
		return "transport-bitswap"
	case CodeGraphsyncFilecoinV1:
		return "transport-graphsync-filecoinv1"
	case CodeIPFSGatewayHTTP:
		return "transport-ipfs-gateway-http"
	case CodeFilecoinPieceHTTP:
		return "transport-filecoin-piece-http"
	}
	return fmt.Sprintf("protocol %#x", code)
}
