package piece

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"unsafe"

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
	// cid.Cast copies what it keeps and never writes to its argument, so
	// a read-only view of the string's bytes spares a copy per payload.
	return cid.Cast(unsafe.Slice(unsafe.StringData(key[8:]), len(key)-8))
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
	return chooseInto(nil, kept, seed, n)
}

// scored is a kept payload's seed score and position.
type scored struct {
	s uint64
	i int
}

// chooseInto is [Choose] appending to dst; it allocates nothing for up to
// 64 kept payloads when dst has room for the answer.
func chooseInto(dst, kept []cid.Cid, seed string, n int) []cid.Cid {
	var scStack [64]scored
	sc := scStack[:0]
	if len(kept) > len(scStack) {
		sc = make([]scored, 0, len(kept))
	}
	var stack [384]byte
	buf := stack[:0]
	for i, c := range kept {
		var s uint64
		buf, s = seedScore(buf, seed, c)
		sc = append(sc, scored{s, i})
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
	if dst == nil {
		dst = make([]cid.Cid, 0, n)
	}
	for _, x := range sc[:n] {
		dst = append(dst, kept[x.i])
	}
	return dst
}
