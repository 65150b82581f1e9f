package kv

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortTableKeys against an oracle that compares whole keys (hi, the key's
// bytes after skip, id) without pfx: uniform digests, digests crowded into
// a narrow range or onto a few values, duplicates, mixed lengths, keys
// with one hi (bucketSort's path) and several (the comparison sort's).
func TestSortTableKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type gen func(i int) ([]byte, uint64, uint64) // key, id, hi
	digest := func(n int, lead []byte) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(rng.UintN(256))
		}
		copy(d, lead)
		return d
	}
	index := func(d []byte) []byte { return append([]byte{prefixIndex, 0x12, 0x14}, append(d, 0)...) }
	cases := map[string]gen{
		"uniform": func(int) ([]byte, uint64, uint64) { return index(digest(20, nil)), rng.Uint64N(4), 0 },
		"narrow": func(int) ([]byte, uint64, uint64) {
			return index(digest(20, []byte{0x40, byte(rng.UintN(2))})), rng.Uint64N(4), 0
		},
		"few values": func(int) ([]byte, uint64, uint64) {
			return index(digest(20, []byte{byte(rng.UintN(3)), 0, 0, 0, 0, 0, 0, 0, 0, byte(rng.UintN(3))})), rng.Uint64N(2), 0
		},
		"mixed lengths": func(int) ([]byte, uint64, uint64) {
			return append([]byte{prefixIndex}, digest(1+rng.IntN(12), nil)...), rng.Uint64N(3), 0
		},
		"several hi": func(int) ([]byte, uint64, uint64) {
			id := rng.Uint64N(5)
			return popKey(nil, id, digest(20, nil)), id, id
		},
	}
	for name, g := range cases {
		for _, n := range []int{1, 2, 3, 17, 1000, 70000} {
			var arena []byte
			var ks []tableKey
			for i := range n {
				k, id, hi := g(i)
				if i > 0 && rng.UintN(10) == 0 { // a duplicate of an earlier key
					j := rng.IntN(len(ks))
					k, hi = bytes.Clone(arena[ks[j].off:ks[j].off+ks[j].n]), ks[j].hi
				}
				ks = append(ks, tableKey{hi: hi, off: uint32(len(arena)), n: uint32(len(k)), id: id})
				arena = append(arena, k...)
			}
			skip := 0
			if name == "several hi" {
				skip = 1 + idLen
			}
			want := slices.Clone(ks)
			slices.SortStableFunc(want, func(a, b tableKey) int {
				return cmp.Or(cmp.Compare(a.hi, b.hi),
					bytes.Compare(arena[a.off+uint32(skip):a.off+a.n], arena[b.off+uint32(skip):b.off+b.n]),
					cmp.Compare(a.id, b.id))
			})
			got := slices.Clone(ks)
			sortTableKeys(arena, got, skip)
			for i := range want {
				w, g := want[i], got[i]
				if w.hi != g.hi || w.id != g.id || !bytes.Equal(arena[w.off:w.off+w.n], arena[g.off:g.off+g.n]) {
					t.Fatalf("%s, %d keys: entry %d is %x id %d, want %x id %d", name, n, i, arena[g.off:g.off+g.n], g.id, arena[w.off:w.off+w.n], w.id)
				}
			}
		}
	}
}
