package scatter

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/multiformats/go-multihash"
)

// DefaultVnodes is a sensible number of virtual nodes per backend for
// [NewRing]: with 16 backends every share is within about ±15% of even.
const DefaultVnodes = 256

// Ring is a consistent-hash ring over the multihash keyspace: it routes each
// multihash to the backends owning its range, so that a pool of key-sharded
// indexers is queried only where the data lives (see [WithRing]). A Ring is
// immutable and safe for concurrent use.
//
// A ring routes reads; it does not place data. Its answers are complete
// only over backends that hold every multihash the same ring assigns them,
// each owner the whole answer for its keys — the query layer that package
// scatter/keyspace places by keyspace (its Placement builds the ring from the
// layout every process shares). Over any other pool, such as today's
// publisher-sharded indexers, where each holds the multihashes of its own
// publishers, a ring asks the wrong backends, and their "not found" looks
// like a complete answer when it is not.
//
// Placement is deterministic across processes and versions, because the
// ingest side that writes to key-sharded indexers and every query front end
// must agree on it:
//
//   - each backend name contributes vnodes points, the first 8 bytes
//     (big-endian) of SHA-256(name || 0x00 || decimal vnode number);
//   - a multihash's position is the first 8 bytes of its digest when its
//     function is a cryptographic hash (sha1, sha2, dbl-sha2-256, sha3,
//     keccak, shake, blake2b, blake2s, blake3) with a digest of 8 bytes or
//     more —
//     already uniform, and free to compute — and otherwise the first 8
//     bytes of SHA-256 of the whole multihash (identity and other
//     multihashes, or bytes that do not parse);
//   - its owners are the backends of the first points at or after that
//     position, walking clockwise and skipping backends already taken,
//     until replication distinct backends are found.
//
// Adding a backend moves only the keys whose ranges its new points take,
// about 1/(n+1) of them.
type Ring struct {
	names       []string
	points      []ringPoint
	replication int
}

type ringPoint struct {
	pos  uint64
	node int
}

// NewRing builds a ring over the backends named by names (stable, unique
// identifiers such as their URLs; the owners are indexes into names), with
// vnodes points per backend (see [DefaultVnodes]) and replication owners
// per multihash, 1 ≤ replication ≤ len(names).
func NewRing(names []string, vnodes, replication int) (*Ring, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: ring without backends", ErrInvalidOption)
	}
	if vnodes < 1 {
		return nil, fmt.Errorf("%w: ring vnodes %d must be positive", ErrInvalidOption, vnodes)
	}
	if replication < 1 || replication > len(names) {
		return nil, fmt.Errorf("%w: ring replication %d must be between 1 and %d backends", ErrInvalidOption, replication, len(names))
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return nil, fmt.Errorf("%w: empty ring backend name", ErrInvalidOption)
		}
		if seen[n] {
			return nil, fmt.Errorf("%w: ring backend %q named twice", ErrInvalidOption, n)
		}
		seen[n] = true
	}
	r := &Ring{
		names:       slices.Clone(names),
		points:      make([]ringPoint, 0, len(names)*vnodes),
		replication: replication,
	}
	buf := make([]byte, 0, 64)
	for i, n := range names {
		for v := range vnodes {
			buf = append(append(append(buf[:0], n...), 0), strconv.Itoa(v)...)
			sum := sha256.Sum256(buf)
			r.points = append(r.points, ringPoint{pos: binary.BigEndian.Uint64(sum[:8]), node: i})
		}
	}
	// Ties (vanishingly rare) are broken by name, not by position in names,
	// so that the order names are listed in does not matter.
	slices.SortFunc(r.points, func(a, b ringPoint) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(r.names[a.node], r.names[b.node]))
	})
	return r, nil
}

// Len is the number of backends.
func (r *Ring) Len() int { return len(r.names) }

// Replication is the number of owners of each multihash.
func (r *Ring) Replication() int { return r.replication }

// Names returns the backend names, in the order given to NewRing.
func (r *Ring) Names() []string { return slices.Clone(r.names) }

// Owners returns the indexes (into the names given to NewRing) of the
// Replication distinct backends owning mh, the primary first.
func (r *Ring) Owners(mh multihash.Multihash) []int {
	return r.AppendOwners(make([]int, 0, r.replication), mh)
}

// AppendOwners appends the owners of mh to dst, as [Ring.Owners] returns
// them, and returns the extended slice.
func (r *Ring) AppendOwners(dst []int, mh multihash.Multihash) []int {
	pos := ringPosition(mh)
	start, _ := slices.BinarySearchFunc(r.points, pos, func(p ringPoint, pos uint64) int {
		return cmp.Compare(p.pos, pos)
	})
	base := len(dst)
	for i := 0; i < len(r.points) && len(dst)-base < r.replication; i++ {
		node := r.points[(start+i)%len(r.points)].node
		if !slices.Contains(dst[base:], node) {
			dst = append(dst, node)
		}
	}
	return dst
}

// Points returns the positions of the ring's points, ascending (equal
// positions of different backends repeated). Owners change only at them:
// every position in (p, q], for consecutive points p < q, has the owners
// of q, and every position after the last point or at or before the
// first has those of the first.
func (r *Ring) Points() []uint64 {
	out := make([]uint64, len(r.points))
	for i, p := range r.points {
		out[i] = p.pos
	}
	return out
}

// RingPosition returns mh's position on a ring (see [Ring]) and whether it
// is read from the digest's first 8 bytes, as it is for cryptographic
// hashes: then multihashes of the same code and digest length sort by
// their bytes as by their positions.
func RingPosition(mh []byte) (pos uint64, fromDigest bool) {
	code, n := binary.Uvarint(mh)
	if n > 0 && uniformDigest(code) {
		length, m := binary.Uvarint(mh[n:])
		digest := mh[n+max(m, 0):]
		if m > 0 && length >= 8 && uint64(len(digest)) == length {
			return binary.BigEndian.Uint64(digest[:8]), true
		}
	}
	return ringPosition(mh), false
}

// ringPosition is mh's position on the ring; see [Ring].
func ringPosition(mh []byte) uint64 {
	code, n := binary.Uvarint(mh)
	if n > 0 && uniformDigest(code) {
		length, m := binary.Uvarint(mh[n:])
		digest := mh[n+max(m, 0):]
		if m > 0 && length >= 8 && uint64(len(digest)) == length {
			return binary.BigEndian.Uint64(digest[:8])
		}
	}
	sum := sha256.Sum256(mh)
	return binary.BigEndian.Uint64(sum[:8])
}

// uniformDigest reports whether the multihash function code yields
// uniformly distributed digests.
func uniformDigest(code uint64) bool {
	switch code {
	case multihash.SHA1, multihash.SHA2_256, multihash.SHA2_512, multihash.SHA2_256_TRUNC254_PADDED,
		multihash.DBL_SHA2_256, multihash.SHA3_224, multihash.SHA3_256, multihash.SHA3_384,
		multihash.SHA3_512, multihash.KECCAK_224, multihash.KECCAK_256, multihash.KECCAK_384,
		multihash.KECCAK_512, multihash.SHAKE_128, multihash.SHAKE_256, multihash.BLAKE3,
		0x20, 0x1013, 0x1014, 0x1015: // sha2-384, sha2-224, sha2-512/224, sha2-512/256
		// Every hash whose key a store may shorten to a digest prefix
		// (store.IndexKey) is placed by its digest, so that the
		// shortened key lands where the whole one does.
		return true
	}
	return code >= multihash.BLAKE2B_MIN && code <= multihash.BLAKE2S_MAX
}
