package piece

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// PayloadHash is the 64-bit hash that orders the payloads of a piece in a
// [Store]: the first 8 bytes, big-endian, of
// SHA-256(len(provider) ‖ provider ‖ len(piece) ‖ piece ‖ payload), where the
// provider and the piece are their binary forms and the lengths are 4-byte
// big-endian. Stores keep the payloads with the smallest hashes; ties, which
// need a 64-bit collision, are broken by the payload's binary form. See
// [PayloadKey].
func PayloadHash(provider peer.ID, piece, payload cid.Cid) uint64 {
	pk, ck := piece.KeyString(), payload.KeyString()
	var stack [160]byte
	buf := append(stack[:0], 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf, uint32(len(provider)))
	buf = append(buf, provider...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(pk)))
	buf = append(buf, pk...)
	buf = append(buf, ck...)
	sum := sha256.Sum256(buf)
	return binary.BigEndian.Uint64(sum[:8])
}

// PayloadKey is the sort key of payload in the reservoir of (provider,
// piece): the 8-byte big-endian [PayloadHash] followed by the payload's
// binary CID. Byte order of keys is the reservoir order (hash, then CID
// bytes), so a store keeps the k smallest keys. [PayloadFromKey] recovers
// the payload.
func PayloadKey(provider peer.ID, piece, payload cid.Cid) string {
	var b strings.Builder
	pb := payload.Bytes()
	b.Grow(8 + len(pb))
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], PayloadHash(provider, piece, payload))
	b.Write(h[:])
	b.Write(pb)
	return b.String()
}

// PayloadFromKey returns the payload CID of a key made by [PayloadKey].
func PayloadFromKey(key string) (cid.Cid, error) {
	if len(key) <= 8 {
		return cid.Undef, errShortKey
	}
	return cid.Cast([]byte(key[8:]))
}

// SmallestKeys returns the sorted, distinct [PayloadKey]s of payloads, at
// most k of them: the only ones of a batch that can enter a reservoir of
// capacity k. Backends use it to bound the work of AddPayloads.
func SmallestKeys(provider peer.ID, piece cid.Cid, payloads []cid.Cid, k int) []string {
	keys := make([]string, len(payloads))
	for i, p := range payloads {
		keys[i] = PayloadKey(provider, piece, p)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) > k {
		keys = keys[:k]
	}
	return keys
}

var errShortKey = errors.New("piece: payload key too short")

// MaxSamples is the default bound on ?n= of a sample request.
const MaxSamples = 16

// seedScore orders the kept payloads of a piece for a seed: the first 8
// bytes, big-endian, of SHA-256(seed ‖ 0x00 ‖ payload), where payload is the
// binary CID. A valid seed holds no 0x00 byte, so the input is unambiguous.
func seedScore(buf []byte, seed string, payload cid.Cid) ([]byte, uint64) {
	buf = append(buf[:0], seed...)
	buf = append(buf, 0)
	buf = append(buf, payload.KeyString()...)
	sum := sha256.Sum256(buf)
	return buf, binary.BigEndian.Uint64(sum[:8])
}

// Choose returns the n payloads that a sample request with seed answers
// from kept, the payloads of a reservoir: kept ordered by
// SHA-256(seed ‖ 0x00 ‖ payload CID bytes) (the first 8 bytes, big-endian;
// ties by position in kept), the first n. The same seed over the same kept
// payloads always gives the same answer; a different seed gives an
// independent, uniform choice. n larger than len(kept) returns all of
// kept in seed order.
func Choose(kept []cid.Cid, seed string, n int) []cid.Cid {
	type scored struct {
		s uint64
		i int
	}
	sc := make([]scored, len(kept))
	var stack [384]byte
	buf := stack[:0]
	for i, c := range kept {
		var s uint64
		buf, s = seedScore(buf, seed, c)
		sc[i] = scored{s, i}
	}
	slices.SortFunc(sc, func(a, b scored) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return a.i - b.i
	})
	n = min(max(n, 0), len(kept))
	out := make([]cid.Cid, n)
	for i := range out {
		out[i] = kept[sc[i].i]
	}
	return out
}
