package chaingen

// Filecoin pieces: piece context IDs, the metadata that names pieces, and the piece ground truth.

import (
	"encoding/binary"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/metadata"
)

// newPieceContext makes a new context whose ID carries the piece of ad n:
// the dag-cbor list [pieceSize, pieceCID].
func (c *Chain) newPieceContext(n int) int32 {
	i := len(c.ctxIDs)
	p := c.pieceCID(n)
	c.ctxIDs = append(c.ctxIDs, PieceContextID(uint64(1)<<(20+n%16), p))
	if c.ctxPiece == nil {
		c.ctxPiece = make(map[int32]cid.Cid)
	}
	c.ctxPiece[int32(i)] = p
	return int32(i)
}

// PieceContextID returns the ContextID with which Curio names a piece: the
// dag-cbor list [size, piece] (a uint, then a link: tag 42 around the
// bytes 0x00 ‖ CID), the tuple encoding of Filecoin's abi.PieceInfo.
func PieceContextID(size uint64, piece cid.Cid) []byte {
	b := []byte{0x82}
	b = appendCBORHead(b, 0, size)
	link := append([]byte{0x00}, piece.Bytes()...)
	b = append(b, 0xd8, 0x2a)
	b = appendCBORHead(b, 2, uint64(len(link)))
	return append(b, link...)
}

// appendCBORHead appends the shortest CBOR head of major type major and
// argument v.
func appendCBORHead(b []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(b, m|byte(v))
	case v <= 0xff:
		return append(b, m|24, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(v))
	default:
		return binary.BigEndian.AppendUint64(append(b, m|27), v)
	}
}

// pieceContextMetadata is the metadata of an ad whose ContextID names its
// piece: bitswap and filecoin-piece-http, no graphsync.
func pieceContextMetadata() ([]byte, error) {
	m, err := metadata.New(metadata.Bitswap{}, metadata.FilecoinPieceHTTP{})
	if err != nil {
		return nil, err
	}
	return m.Encode(), nil
}

// Pieces returns the ground truth of a piece sampler: for every Filecoin
// piece named by an ad with entries (in its graphsync-filecoinv1 metadata,
// or in its ContextID with [Config.PieceContextEvery]), the multihashes
// advertised under it, in order and without repeats. Removals are ignored,
// as pieces are immutable. Ads whose metadata names no piece (bitswap only)
// are counted in the second result.
func (c *Chain) Pieces() (pieces map[cid.Cid][]multihash.Multihash, withoutPiece int) {
	c.mu.RLock()
	ops := c.ops
	c.mu.RUnlock()
	pieces = make(map[cid.Cid][]multihash.Multihash)
	seen := make(map[cid.Cid]map[uint64]bool)
	for _, o := range ops {
		if o.kind != opPut {
			continue
		}
		if !o.piece.Defined() {
			withoutPiece++
			continue
		}
		if seen[o.piece] == nil {
			seen[o.piece] = make(map[uint64]bool)
		}
		for _, s := range o.spans {
			for ord := s.start; ord < s.start+s.n; ord++ {
				if !seen[o.piece][ord] {
					seen[o.piece][ord] = true
					pieces[o.piece] = append(pieces[o.piece], appendMultihash(nil, c.cfg.Seed, ord))
				}
			}
		}
	}
	return pieces, withoutPiece
}

// pieceCID returns a Filecoin piece CID (fil-commitment-unsealed,
// sha2-256-trunc254-padded) for ad n.
func (c *Chain) pieceCID(n int) cid.Cid {
	d := c.derive("piece", uint64(n))
	d[31] &= 0x3f
	mh, _ := multihash.Encode(d[:], multihash.SHA2_256_TRUNC254_PADDED) // cannot fail
	return cid.NewCidV1(cid.FilCommitmentUnsealed, mh)
}

// entriesMetadata is the metadata of ad n with entries: bitswap, graphsync
// with a piece, or both, or graphsync with the HTTP gateway.
func (c *Chain) entriesMetadata(n int) ([]byte, error) {
	gs := metadata.GraphsyncFilecoinV1{PieceCID: c.pieceCID(n), VerifiedDeal: n%3 == 0, FastRetrieval: true}
	var ps []metadata.Protocol
	switch n % 4 {
	case 0:
		ps = []metadata.Protocol{metadata.Bitswap{}}
	case 1:
		ps = []metadata.Protocol{gs}
	case 2:
		ps = []metadata.Protocol{metadata.Bitswap{}, gs}
	case 3:
		ps = []metadata.Protocol{gs, metadata.IPFSGatewayHTTP{}}
	}
	m, err := metadata.New(ps...)
	if err != nil {
		return nil, err
	}
	return m.Encode(), nil
}

// updateMetadata is the metadata of update ad n: always graphsync with the
// ad's own piece, so it differs from every earlier metadata.
func (c *Chain) updateMetadata(n int) ([]byte, error) {
	ps := []metadata.Protocol{metadata.GraphsyncFilecoinV1{PieceCID: c.pieceCID(n), VerifiedDeal: true, FastRetrieval: n%2 == 0}}
	if n%2 == 1 {
		ps = append(ps, metadata.Bitswap{})
	}
	m, err := metadata.New(ps...)
	if err != nil {
		return nil, err
	}
	return m.Encode(), nil
}
