// Package sample keeps the bounded bottom-k sample of a context's
// multihashes behind [store.Sampler], shared by the memory and kv backends.
//
// A [Set] holds the multihashes whose keyed hash is below its threshold Tau,
// at most [store.SampleKeep] of them. Adding candidates never raises Tau;
// when the set would grow past the bound, Tau drops to the smallest hash
// left out, and every member at or above it goes. So a Set is always
// exactly {m in the context : hash(m) < Tau}, whatever the order of the
// additions, and adding a multihash twice changes nothing.
package sample

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/indexkit/indexkit/store"
)

// Hasher hashes multihashes under a secret key.
type Hasher struct{ key uint64 }

// NewHasher returns the Hasher of key.
func NewHasher(key uint64) Hasher { return Hasher{key: key} }

// Sum returns the keyed hash of mh.
func (h Hasher) Sum(mh []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(h.key)
	d.Write(mh)
	return d.Sum64()
}

// Item is one member of a Set.
type Item struct {
	Hash uint64
	MH   []byte
}

// Set is the sample of one context. The zero Set is not empty-and-open: use
// [New].
type Set struct {
	// Tau is the threshold: members hash below it, and a candidate is
	// admitted only if it does.
	Tau uint64
	// Items are the members in ascending (Hash, MH) order.
	Items []Item
}

// New returns an empty Set that admits any hash but math.MaxUint64.
func New() *Set { return &Set{Tau: math.MaxUint64} }

func cmpItem(a, b Item) int {
	if c := cmp.Compare(a.Hash, b.Hash); c != 0 {
		return c
	}
	return bytes.Compare(a.MH, b.MH)
}

// Add adds the candidates below Tau, copying their multihashes, and reports
// whether the set changed.
func (s *Set) Add(cands []Item) bool {
	n0 := len(s.Items)
	for _, c := range cands {
		if c.Hash < s.Tau {
			c.MH = bytes.Clone(c.MH)
			s.Items = append(s.Items, c)
		}
	}
	if len(s.Items) == n0 {
		return false
	}
	old := slices.Clone(s.Items[:n0])
	s.trim()
	return !slices.EqualFunc(old, s.Items, func(a, b Item) bool { return cmpItem(a, b) == 0 })
}

// trim sorts the items, drops repeats and, past the bound, lowers Tau to
// the smallest hash left out and drops every item at or above it.
func (s *Set) trim() {
	slices.SortFunc(s.Items, cmpItem)
	s.Items = slices.CompactFunc(s.Items, func(a, b Item) bool { return cmpItem(a, b) == 0 })
	if len(s.Items) > store.SampleKeep {
		s.Tau = s.Items[store.SampleKeep].Hash
		n := store.SampleKeep
		for n > 0 && s.Items[n-1].Hash >= s.Tau {
			n-- // a tie with the new threshold: it goes too
		}
		clear(s.Items[n:])
		s.Items = s.Items[:n]
	}
}

// Remove removes the members among cands and reports whether the set
// changed. Tau stays.
func (s *Set) Remove(cands []Item) bool {
	changed := false
	for _, c := range cands {
		if i, found := slices.BinarySearchFunc(s.Items, c, cmpItem); found {
			s.Items = slices.Delete(s.Items, i, i+1)
			changed = true
		}
	}
	return changed
}

// Multihashes returns copies of the members in ascending byte order.
func (s *Set) Multihashes() [][]byte {
	out := make([][]byte, len(s.Items))
	for i, it := range s.Items {
		out[i] = bytes.Clone(it.MH)
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// Encode appends the stored form of s to dst: Tau (8 bytes, big-endian),
// then each member's multihash, uvarint length-prefixed.
func (s *Set) Encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, s.Tau)
	for _, it := range s.Items {
		dst = binary.AppendUvarint(dst, uint64(len(it.MH)))
		dst = append(dst, it.MH...)
	}
	return dst
}

// ErrCorrupt is returned by Decode for bytes Encode did not write.
var ErrCorrupt = errors.New("sample: corrupt set")

// Tau returns the threshold of an encoded Set.
func Tau(b []byte) (uint64, error) {
	if len(b) < 8 {
		return 0, ErrCorrupt
	}
	return binary.BigEndian.Uint64(b), nil
}

// Decode reads an encoded Set, hashing its members with h; it copies b.
func Decode(b []byte, h Hasher) (*Set, error) {
	tau, err := Tau(b)
	if err != nil {
		return nil, err
	}
	s := &Set{Tau: tau}
	for b = b[8:]; len(b) > 0; {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n || n == 0 {
			return nil, ErrCorrupt
		}
		mh := bytes.Clone(b[k : k+int(n)])
		b = b[k+int(n):]
		s.Items = append(s.Items, Item{Hash: h.Sum(mh), MH: mh})
	}
	slices.SortFunc(s.Items, cmpItem)
	if len(s.Items) > store.SampleKeep {
		return nil, ErrCorrupt
	}
	return s, nil
}

// Candidates returns the multihashes of mhs that hash below tau and could
// enter a sample with that threshold: of those, only the SampleKeep+1
// smallest by (hash, multihash) matter to [Set.Add], so it keeps no more
// than about twice that many, lowering its own threshold as it goes. Its
// cost is one hash per multihash plus a small sort now and then. The items
// share the bytes of mhs.
func Candidates[M ~[]byte](h Hasher, tau uint64, mhs []M) []Item {
	const keep = store.SampleKeep + 1
	var out []Item
	for _, mh := range mhs {
		x := h.Sum(mh)
		if x >= tau {
			continue
		}
		out = append(out, Item{Hash: x, MH: []byte(mh)})
		if len(out) == 2*keep {
			slices.SortFunc(out, cmpItem)
			out = slices.CompactFunc(out, func(a, b Item) bool { return cmpItem(a, b) == 0 })
			if len(out) > keep {
				// Anything at or above the (keep)th smallest distinct
				// candidate can never be among the keep smallest.
				tau = out[keep-1].Hash + 1
				if tau == 0 {
					tau = out[keep-1].Hash // wrapped: MaxUint64 stays
				}
				out = out[:keep]
			}
		}
	}
	return out
}

// Below returns every multihash of mhs that hashes below tau: the ones
// [Set.Remove] may have to take out. The items share the bytes of mhs.
func Below[M ~[]byte](h Hasher, tau uint64, mhs []M) []Item {
	var out []Item
	for _, mh := range mhs {
		if x := h.Sum(mh); x < tau {
			out = append(out, Item{Hash: x, MH: []byte(mh)})
		}
	}
	return out
}
