package kv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestIDMergerSingleOperand covers the one-operand shortcut of
// deletableFinish: operands already in normal form (as Put writes them, and
// as earlier merges leave them) must come back unchanged, and those that are
// not must still be normalized.
func TestIDMergerSingleOperand(t *testing.T) {
	for _, tc := range []struct {
		ops          []refOp
		includesBase bool
	}{
		{nil, false},
		{nil, true},
		{[]refOp{{5, false}}, true},
		{[]refOp{{5, true}}, false},
		{[]refOp{{5, true}}, true},              // a lone deletion with the base: nothing
		{[]refOp{{1, false}, {2, true}}, false}, // normalized without base
		{[]refOp{{1, false}, {2, true}}, true},  // deletion must go
		{[]refOp{{2, false}, {1, false}}, true}, // descending
		{[]refOp{{2, false}, {2, false}}, true}, // duplicate
		{[]refOp{{2, false}, {2, true}}, false}, // add then delete: delete wins
		{[]refOp{{2, true}, {2, false}}, true},  // delete then add: add wins
		{[]refOp{{0, false}, {0, true}}, true},  // ID 0
		{[]refOp{{7, false}, {3, true}}, false}, // out of order, kept deletion
		{[]refOp{{math.MaxUint64 >> 1, false}}, true},
	} {
		for range 2 {
			v := encodeOps(tc.ops)
			m, _ := NewIDMerger(nil, v)
			out, del, c, err := m.deletableFinish(tc.includesBase)
			if err != nil {
				t.Fatalf("%v base=%v: %v", tc.ops, tc.includesBase, err)
			}
			s := &sim{t: t, ops: tc.ops, canonical: true}
			s.check("single operand", out, del, tc.ops, tc.includesBase)
			c.Close()
		}
	}
}

// TestIDMergerPool checks that pooling never lets one merge see another's
// state: results stay intact while their merger is open, however many other
// mergers come and go, and a merger taken from the pool starts empty.
func TestIDMergerPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	type open struct {
		want []byte
		got  []byte
		c    interface{ Close() error }
	}
	var live []open
	var copies [][2][]byte // results copied before their merger was closed, and what they must be
	for i := range 2000 {
		ops := make([]refOp, 1+rng.IntN(50))
		for j := range ops {
			ops[j] = refOp{id: uint64(rng.IntN(1000)), del: rng.IntN(4) == 0}
		}
		// Sometimes one big operand, so that buffers grow and outsized
		// mergers are let go instead of pooled.
		if rng.IntN(100) == 0 {
			for range 5000 {
				ops = append(ops, refOp{id: uint64(rng.IntN(100000))})
			}
		}
		m, _ := NewIDMerger(nil, encodeOps(ops[:len(ops)/2]))
		if err := m.MergeNewer(encodeOps(ops[len(ops)/2:])); err != nil {
			t.Fatal(err)
		}
		includesBase := rng.IntN(2) == 0
		out, c, err := m.Finish(includesBase)
		if err != nil {
			t.Fatal(err)
		}
		want := encodeOps(wantPartial(ops))
		if includesBase {
			want = encodeOps(wantFull(ops))
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("merge %d (base=%v): got %x, want %x", i, includesBase, out, want)
		}
		live = append(live, open{want, out, c})
		// Close a random open merger now and then; before closing, its
		// result must still be what it was.
		for len(live) > 0 && rng.IntN(3) != 0 {
			k := rng.IntN(len(live))
			o := live[k]
			if !bytes.Equal(o.got, o.want) {
				t.Fatalf("result of an open merger changed: got %x, want %x", o.got, o.want)
			}
			kept := bytes.Clone(o.got)
			if err := o.c.Close(); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, k, k+1)
			copies = append(copies, [2][]byte{kept, o.want})
		}
	}
	// Copies taken before Close survive all later reuse of the mergers.
	for _, c := range copies {
		if !bytes.Equal(c[0], c[1]) {
			t.Fatalf("copied result changed: got %x, want %x", c[0], c[1])
		}
	}
	for _, o := range live {
		if !bytes.Equal(o.got, o.want) {
			t.Fatalf("result of an open merger changed: got %x, want %x", o.got, o.want)
		}
		o.c.Close()
	}
}

// TestIDMergerConcurrent runs merges on several goroutines, as Pebble's
// flushes, compactions and reads do, so that -race sees the pool shared.
func TestIDMergerConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range 300 {
				ops := make([]refOp, rng.IntN(30))
				for j := range ops {
					ops[j] = refOp{id: uint64(rng.IntN(20)), del: rng.IntN(3) == 0}
				}
				s := &sim{t: t, rng: rng, ops: ops, canonical: true}
				s.run(splitOps(rng, ops))
			}
		})
	}
	wg.Wait()
}

func TestIDMergerCorrupt(t *testing.T) {
	good := encodeOps([]refOp{{1, false}, {2, true}})
	bad := map[string][]byte{
		"truncated":            {0x80},
		"truncated after good": append(bytes.Clone(good), 0x81, 0x80),
		"overflow":             {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		"eleven bytes":         {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
	}
	for name, b := range bad {
		for _, includesBase := range []bool{false, true} {
			for pos := range 3 { // the bad operand first, older, newer
				t.Run(fmt.Sprintf("%s/base=%v/pos=%d", name, includesBase, pos), func(t *testing.T) {
					var m *IDMerger
					var err error
					switch pos {
					case 0:
						m, err = NewIDMerger(nil, b)
						if err == nil {
							err = m.MergeNewer(good)
						}
					case 1:
						m, err = NewIDMerger(nil, good)
						if err == nil {
							err = m.MergeOlder(b)
						}
					case 2:
						m, err = NewIDMerger(nil, good)
						if err == nil {
							err = m.MergeNewer(b)
						}
					}
					if err == nil {
						var c interface{ Close() error }
						_, _, c, err = m.deletableFinish(includesBase)
						if c != nil {
							c.Close()
						}
					}
					if !errors.Is(err, errCorrupt) {
						t.Fatalf("err = %v, want one wrapping errCorrupt", err)
					}
				})
			}
		}
		t.Run(name+"/alone", func(t *testing.T) {
			for _, includesBase := range []bool{false, true} {
				m, _ := NewIDMerger(nil, b)
				_, _, c, err := m.deletableFinish(includesBase)
				if !errors.Is(err, errCorrupt) {
					t.Fatalf("base=%v: err = %v, want one wrapping errCorrupt", includesBase, err)
				}
				if c != nil {
					c.Close()
				}
			}
			if _, err := appendLiveIDs(nil, b); !errors.Is(err, errCorrupt) {
				t.Fatalf("appendLiveIDs: err = %v, want one wrapping errCorrupt", err)
			}
		})
	}
	// A merger that failed and was closed must not leak its operands into
	// the next merge.
	for range 10 {
		m, _ := NewIDMerger(nil, good)
		out, c, err := m.Finish(true)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeOps([]refOp{{1, false}}); !bytes.Equal(out, want) {
			t.Fatalf("after corrupt merges: got %x, want %x", out, want)
		}
		c.Close()
	}
}

// TestIDMergerNotDeletable guards the fix described at IDMerger: Pebble
// v2.1.7 panics in compactions when a DeletableValueMerger drops a key whose
// merge consumed an older SET, so IDMerger must not offer DeletableFinish.
func TestIDMergerNotDeletable(t *testing.T) {
	m, _ := NewIDMerger(nil, nil)
	defer m.Close()
	if _, ok := any(m).(interface {
		DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error)
	}); ok {
		t.Fatal("IDMerger implements DeletableFinish, which crashes Pebble v2.1.7 compactions (see IDMerger)")
	}
}
