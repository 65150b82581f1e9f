package querynode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// The export's ranges against the placement's own answer, key by key: a
// key the export sends is never skipped, and a skip never jumps over a
// key it sends; most keys it does not send are skipped.
func TestExportRanges(t *testing.T) {
	var nodes []keyspace.Node
	for i := range 5 {
		nodes = append(nodes, keyspace.Node{Name: fmt.Sprintf("q%d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", 4000+i)})
	}
	names := []string{"q0", "q1", "q2", "q3"}
	l1 := keyspace.Layout{Epoch: 1, Replication: 2, Nodes: nodes[:4], Current: names, Phase: keyspace.PhaseStable}
	join, err := l1.Join(nodes[4])
	if err != nil {
		t.Fatal(err)
	}
	leave, err := l1.Leave("q3")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var mhs []multihash.Multihash
	for range 3000 {
		d := make([]byte, 32)
		for i := range d {
			d[i] = byte(rng.UintN(256))
		}
		mh, _ := multihash.Encode(d, multihash.SHA2_256)
		mhs = append(mhs, mh)
	}
	slices.SortFunc(mhs, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	for _, tc := range []struct {
		name string
		l    keyspace.Layout
	}{{"join", join}, {"leave", leave}} {
		place, err := keyspace.NewPlacement(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		dests := gainingNodes(place)
		for self := range 4 {
			for _, skip := range []func(int) bool{nil, func(i int) bool { return i == (self+1)%4 }} {
				r := newExportRanges(place, self, dests, skip)
				sends := func(mh multihash.Multihash) bool {
					return place.Source(mh, skip) == self && slices.ContainsFunc(dests, func(d int) bool { return place.Gains(d, mh) })
				}
				skipped, sent := 0, 0
				for i, mh := range mhs {
					target := r.seek(mh)
					if sends(mh) {
						sent++
						if target != nil {
							t.Fatalf("%s, source %d: a key it sends is skipped", tc.name, self)
						}
						continue
					}
					if target == nil {
						continue
					}
					skipped++
					if bytes.Compare(target, mh) <= 0 {
						t.Fatalf("%s: skip target %x not past %x", tc.name, target, []byte(mh))
					}
					for _, later := range mhs[i+1:] {
						if bytes.Compare(later, target) >= 0 {
							break
						}
						if sends(later) {
							t.Fatalf("%s, source %d: skipping from %x to %x jumps over a key it sends", tc.name, self, []byte(mh), target)
						}
					}
				}
				if rest := len(mhs) - sent; sent == 0 || skipped != rest {
					t.Errorf("%s, source %d: sends %d keys, skips %d of the %d others", tc.name, self, sent, skipped, rest)
				}
			}
		}
	}
}

// The drop's spans against the placement's own answer, at and around
// every boundary of the ring (where an off-by-one would show) and at
// random positions, in both key forms of sha2-256: a key lies in a span
// exactly when its node does not own it.
func TestDropSpans(t *testing.T) {
	var nodes []keyspace.Node
	for i := range 5 {
		nodes = append(nodes, keyspace.Node{Name: fmt.Sprintf("q%d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", 4000+i)})
	}
	l := keyspace.Layout{Epoch: 1, Replication: 2, Nodes: nodes, Current: []string{"q0", "q1", "q2", "q3", "q4"}, Phase: keyspace.PhaseStable}
	place, err := keyspace.NewPlacement(l)
	if err != nil {
		t.Fatal(err)
	}
	var positions []uint64
	for _, b := range place.Boundaries() {
		positions = append(positions, b-1, b, b+1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		positions = append(positions, rng.Uint64())
	}
	positions = append(positions, 0, ^uint64(0))
	for self := range 5 {
		segs := segmentsWhere(place, func(mh multihash.Multihash) bool { return !place.Owns(self, mh) })
		for _, size := range []int{32, 20} { // whole keys, digest-prefix keys
			h := []byte{multihash.SHA2_256, byte(size)}
			spans := segs.spans(h)
			if len(spans) == 0 {
				t.Fatalf("node %d owns the whole ring", self)
			}
			for _, pos := range positions {
				d := make([]byte, size)
				for i := 8; i < size; i++ {
					d[i] = byte(rng.UintN(256))
				}
				binary.BigEndian.PutUint64(d, pos)
				form := append(slices.Clone(h), d...)
				whole, _ := multihash.Encode(append(slices.Clone(d), make([]byte, 32-size)...), multihash.SHA2_256)
				k := append(slices.Clone(form), 0)
				in := slices.ContainsFunc(spans, func(sp store.Span) bool {
					return bytes.Compare(k, sp.Start) >= 0 && bytes.Compare(k, sp.End) < 0
				})
				if owns := place.Owns(self, whole); in == owns {
					t.Fatalf("node %d, %d-byte form at %#x: in a dropped span %v, owned %v", self, size, pos, in, owns)
				}
			}
		}
	}
}
