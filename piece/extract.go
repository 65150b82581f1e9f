package piece

import (
	"encoding/binary"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
	"github.com/multiformats/go-varint"

	"github.com/indexkit/indexkit/ingest/metadata"
)

// Multicodec codes of piece CIDs; see [IsPieceCID].
const (
	// CodecFilCommitmentUnsealed is fil-commitment-unsealed, the codec of a
	// v1 piece CID (CommP).
	CodecFilCommitmentUnsealed = 0xf101
	// MhSHA256Trunc254Padded is sha2-256-trunc254-padded, the multihash of
	// a v1 piece CID: 32 bytes.
	MhSHA256Trunc254Padded = 0x1012
	// MhFr32SHA256Trunc254Padbintree is fr32-sha256-trunc254-padbintree,
	// the multihash of a v2 piece CID (FRC-0069), under the raw codec: a
	// uvarint of the padding, one byte of tree height, then 32 bytes.
	MhFr32SHA256Trunc254Padbintree = 0x1011
)

// IsPieceCID reports whether c is a Filecoin piece CID in either form that
// is deployed:
//
//   - v1 (CommP): CIDv1, codec fil-commitment-unsealed (0xf101), multihash
//     sha2-256-trunc254-padded (0x1012) of 32 bytes; the piece size travels
//     separately (in a deal, or in a ContextID);
//   - v2 (FRC-0069): CIDv1, codec raw (0x55), multihash
//     fr32-sha256-trunc254-padbintree (0x1011) whose digest is
//     uvarint(padding) ‖ height ‖ 32-byte root, so that it carries the size.
//
// Both are kept as they are: a v1 and a v2 CID of the same piece are two
// keys of a [Store].
func IsPieceCID(c cid.Cid) bool {
	if !c.Defined() || c.Version() != 1 {
		return false
	}
	dm, err := multihash.Decode(c.Hash())
	if err != nil {
		return false
	}
	switch {
	case c.Type() == CodecFilCommitmentUnsealed && dm.Code == MhSHA256Trunc254Padded:
		return len(dm.Digest) == 32
	case c.Type() == cid.Raw && dm.Code == MhFr32SHA256Trunc254Padbintree:
		_, n, err := varint.FromUvarint(dm.Digest)
		return err == nil && len(dm.Digest) == n+1+32
	}
	return false
}

// PieceOf returns the piece an advertisement names, from its ContextID
// first ([PieceFromContextID]) and otherwise from its metadata
// ([PieceFromMetadata]), and false when neither names a valid piece CID.
// The ContextID wins because it is the key of the whole context (later ads
// may change its metadata); in the chains seen so far the two never
// disagree. It never fails: bytes it cannot read name no piece, and the ad
// is counted in [Counters].AdsWithoutPiece instead of stopping a walk.
func PieceOf(contextID, meta []byte) (cid.Cid, bool) {
	if p, ok := PieceFromContextID(contextID); ok {
		return p, true
	}
	return PieceFromMetadata(meta)
}

// PieceFromMetadata returns the PieceCID of the graphsync-filecoinv1
// protocol (0x0910) of raw IPNI metadata, wherever it is among the
// protocols (the JavaScript piece indexer and go-libipni both miss it in
// some positions; see ingest/metadata). It returns false when the metadata
// has no graphsync protocol, does not decode, or names a CID that is not a
// piece CID ([IsPieceCID]).
func PieceFromMetadata(meta []byte) (cid.Cid, bool) {
	p, ok, err := metadata.PieceCID(meta)
	if err != nil || !ok || !IsPieceCID(p) {
		return cid.Undef, false
	}
	return p, true
}

// PieceFromContextID returns the piece a ContextID carries, in one of these
// encodings:
//
//   - the dag-cbor list [pieceSize, pieceCID] (a uint and a link: tag 42
//     around 0x00 ‖ CID bytes), which Curio writes (the tuple encoding of
//     Filecoin's abi.PieceInfo) and the retrieval-checking FRC
//     (filecoin-project/FIPs#1089) and the JavaScript piece indexer read;
//     the list [pieceCID, pieceSize] is accepted as well;
//   - the binary form of a piece CID alone (a v2 piece CID carries its size).
//
// The CID must be a piece CID ([IsPieceCID]); the size is not checked
// against it. Anything else (Boost's opaque context IDs) returns false.
func PieceFromContextID(contextID []byte) (cid.Cid, bool) {
	if len(contextID) == 0 {
		return cid.Undef, false
	}
	if p, ok := pieceInfoCBOR(contextID); ok {
		return p, true
	}
	n, c, err := cid.CidFromBytes(contextID)
	if err != nil || n != len(contextID) || !IsPieceCID(c) {
		return cid.Undef, false
	}
	return c, true
}

// pieceInfoCBOR reads the dag-cbor list of two items [uint, link] or
// [link, uint], and nothing after it.
func pieceInfoCBOR(b []byte) (cid.Cid, bool) {
	if len(b) < 1 || b[0] != 0x82 {
		return cid.Undef, false
	}
	b = b[1:]
	var piece cid.Cid
	var size bool
	for range 2 {
		if len(b) == 0 {
			return cid.Undef, false
		}
		switch b[0] >> 5 {
		case 0: // uint
			if size {
				return cid.Undef, false
			}
			_, rest, ok := cborArg(b)
			if !ok {
				return cid.Undef, false
			}
			b, size = rest, true
		case 6: // tag
			if piece.Defined() {
				return cid.Undef, false
			}
			tag, rest, ok := cborArg(b)
			if !ok || tag != 42 || len(rest) == 0 || rest[0]>>5 != 2 {
				return cid.Undef, false
			}
			n, rest, ok := cborArg(rest)
			if !ok || n > uint64(len(rest)) || n < 2 || rest[0] != 0x00 {
				return cid.Undef, false
			}
			c, err := cid.Cast(rest[1:n])
			if err != nil || !IsPieceCID(c) {
				return cid.Undef, false
			}
			b, piece = rest[n:], c
		default:
			return cid.Undef, false
		}
	}
	if len(b) != 0 || !piece.Defined() || !size {
		return cid.Undef, false
	}
	return piece, true
}

// cborArg reads the argument of the CBOR head at b[0] (major types 0, 2 and
// 6 use it the same way), in its shortest form only, as dag-cbor requires.
func cborArg(b []byte) (v uint64, rest []byte, ok bool) {
	info := b[0] & 0x1f
	b = b[1:]
	switch {
	case info < 24:
		return uint64(info), b, true
	case info == 24 && len(b) >= 1 && b[0] >= 24:
		return uint64(b[0]), b[1:], true
	case info == 25 && len(b) >= 2:
		v = uint64(binary.BigEndian.Uint16(b))
		return v, b[2:], v > 0xff
	case info == 26 && len(b) >= 4:
		v = uint64(binary.BigEndian.Uint32(b))
		return v, b[4:], v > 0xffff
	case info == 27 && len(b) >= 8:
		v = binary.BigEndian.Uint64(b)
		return v, b[8:], v > 0xffffffff
	}
	return 0, nil, false
}

// PayloadCID returns the payload CID of an advertised multihash: CIDv1 with
// the raw codec (0x55). IPNI entries are bare multihashes, so the codec of
// the original block is not known; raw is what retrieval by multihash needs
// (a trustless gateway or bitswap serves the block bytes whatever the codec
// in the CID), and what the JavaScript piece indexer returns. It returns
// false for bytes that are not a well-formed multihash.
func PayloadCID(mh []byte) (cid.Cid, bool) {
	m, err := multihash.Cast(mh)
	if err != nil {
		return cid.Undef, false
	}
	return cid.NewCidV1(cid.Raw, m), true
}
