package kv

// The IDMerger model test: a reference merge of operand lists checked against IDMerger.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// refOp is one operation of the reference model of IDMerger.
type refOp struct {
	id  uint64
	del bool
}

func (o refOp) String() string {
	if o.del {
		return fmt.Sprintf("-%d", o.id)
	}
	return fmt.Sprintf("+%d", o.id)
}

func encodeOps(ops []refOp) []byte {
	var b []byte
	for _, o := range ops {
		b = appendOp(b, o.id, o.del)
	}
	return b
}

// decodeOps parses an operand or a merged value; ok is false if it is
// malformed.
func decodeOps(v []byte) (ops []refOp, ok bool) {
	for len(v) > 0 {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return ops, false
		}
		ops = append(ops, refOp{id: x >> 1, del: x&1 == 1})
		v = v[n:]
	}
	return ops, true
}

// wantPartial is what a merge of ops (oldest first) without the base must
// give: for every ID touched, its newest operation, in ascending ID order.
func wantPartial(ops []refOp) []refOp {
	newest := make(map[uint64]bool) // id → del
	for _, o := range ops {
		newest[o.id] = o.del
	}
	out := make([]refOp, 0, len(newest))
	for id, del := range newest {
		out = append(out, refOp{id, del})
	}
	slices.SortFunc(out, func(a, b refOp) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}

// wantFull is what a merge of ops including the base must give: the IDs that
// a set holds after applying ops in order, ascending, all as additions. It is
// computed the trivially correct way, with a map used as a set.
func wantFull(ops []refOp) []refOp {
	set := make(map[uint64]bool)
	for _, o := range ops {
		if o.del {
			delete(set, o.id)
		} else {
			set[o.id] = true
		}
	}
	out := make([]refOp, 0, len(set))
	for id := range set {
		out = append(out, refOp{id: id})
	}
	slices.SortFunc(out, func(a, b refOp) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}

// simOperand is one merge operand of a simulated key: its bytes, the range of
// the original operations it stands for, and whether it is a base (a value
// merged with includesBase, which Pebble writes as a SET).
type simOperand struct {
	b      []byte
	lo, hi int
	base   bool
}

// sim drives IDMerger the way Pebble may: operands of one key, oldest first,
// merged in contiguous runs with includesBase=false (flushes and compactions
// that do not reach the oldest operand), in runs that start at the oldest
// operand with includesBase=true (a compaction into the bottommost level,
// whose result is a base that newer operands merge with later), and finally
// read with includesBase=true.
type sim struct {
	t   testing.TB
	rng *rand.Rand
	ops []refOp // every operation, oldest first
	// canonical is set when every operand is canonically encoded, so merged
	// values can be compared byte for byte, not only decoded.
	canonical bool
	log       []string
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nops: %v\nmerge log:\n  %s", fmt.Sprintf(format, args...), s.ops, strings.Join(s.log, "\n  "))
}

// merge merges run (oldest first) into one value, building the merger from a
// random operand of the run and adding the others with a random mix of
// MergeOlder and MergeNewer, as Pebble does in compactions (MergeOlder) and
// reverse iteration (MergeNewer). Every operand is handed over in a scratch
// buffer that is overwritten once the call returns: the caller owns it.
func (s *sim) merge(run []simOperand, includesBase bool) (out []byte, del bool) {
	s.t.Helper()
	scratch := make([]byte, 0, 64)
	lend := func(b []byte) []byte {
		scratch = append(scratch[:0], b...)
		return scratch
	}
	scribble := func() {
		for i := range scratch {
			scratch[i] = 0x80 // an unterminated varint if it were ever read
		}
	}
	k := s.rng.IntN(len(run))
	order := []int{k}
	m, err := NewIDMerger([]byte("key"), lend(run[k].b))
	scribble()
	if err != nil {
		s.fail("NewIDMerger: %v", err)
	}
	lo, hi := k, k+1
	for lo > 0 || hi < len(run) {
		if lo > 0 && (hi == len(run) || s.rng.IntN(2) == 0) {
			lo--
			order = append(order, -lo-1)
			err = m.MergeOlder(lend(run[lo].b))
		} else {
			order = append(order, hi+1)
			err = m.MergeNewer(lend(run[hi].b))
			hi++
		}
		scribble()
		if err != nil {
			s.fail("merge: %v", err)
		}
	}
	var v []byte
	var c interface{ Close() error }
	useDeletable := s.rng.IntN(4) != 0
	if useDeletable {
		v, del, c, err = m.deletableFinish(includesBase)
	} else {
		v, c, err = m.Finish(includesBase)
	}
	if err != nil {
		s.fail("finish: %v", err)
	}
	if c == nil {
		s.fail("finish returned a nil closer")
	}
	out = bytes.Clone(v)
	if err := c.Close(); err != nil {
		s.fail("close: %v", err)
	}
	if !useDeletable {
		del = includesBase && len(out) == 0
	}
	s.log = append(s.log, fmt.Sprintf("merge %d operands (start, then ±older/newer: %v) base=%v -> %x del=%v", len(run), order, includesBase, out, del))
	return out, del
}

// check compares a merged value with the model for ops.
func (s *sim) check(what string, got []byte, del bool, ops []refOp, includesBase bool) {
	s.t.Helper()
	var want []refOp
	if includesBase {
		want = wantFull(ops)
	} else {
		want = wantPartial(ops)
	}
	dec, ok := decodeOps(got)
	if !ok {
		s.fail("%s: merged value %x does not decode", what, got)
	}
	if !slices.Equal(dec, want) {
		s.fail("%s (includesBase=%v): got %v, want %v", what, includesBase, dec, want)
	}
	if s.canonical && !bytes.Equal(got, encodeOps(want)) {
		s.fail("%s: got bytes %x, want %x", what, got, encodeOps(want))
	}
	if wantDel := includesBase && len(want) == 0; del != wantDel {
		s.fail("%s: delete = %v, want %v", what, del, wantDel)
	}
	// What a lookup reads from the value: the IDs it adds.
	live, err := appendLiveIDs(nil, got)
	if err != nil {
		s.fail("%s: appendLiveIDs(%x): %v", what, got, err)
	}
	var wantLive []uint64
	for _, o := range want {
		if !o.del {
			wantLive = append(wantLive, o.id)
		}
	}
	if !slices.Equal(live, wantLive) {
		s.fail("%s: appendLiveIDs = %v, want %v", what, live, wantLive)
	}
}

// run merges operands (which cover s.ops in order) in random groupings, then
// all that is left with includesBase, checking every result against the model.
// Only the oldest operand can be a base, so only runs that start there may
// (and, once it is a base, must) merge with includesBase.
func (s *sim) run(operands []simOperand) {
	s.t.Helper()
	for range s.rng.IntN(6) {
		if len(operands) == 0 {
			break
		}
		i := s.rng.IntN(len(operands))
		j := i + 1 + s.rng.IntN(len(operands)-i)
		includesBase := i == 0 && (operands[0].base || s.rng.IntN(3) == 0)
		run := operands[i:j]
		out, del := s.merge(run, includesBase)
		lo, hi := run[0].lo, run[len(run)-1].hi
		if includesBase {
			// Everything older than this run was merged away into
			// nothing, so the set after ops[:hi] is the set this run
			// stands for.
			lo = 0
		}
		s.check(fmt.Sprintf("partial merge of operands %d..%d", i, j-1), out, del, s.ops[lo:hi], includesBase)
		merged := simOperand{b: out, lo: lo, hi: hi, base: includesBase}
		if del {
			// Pebble drops a key that a base merge deleted: no record is
			// written, and newer operands have nothing older.
			operands = slices.Delete(operands, i, j)
		} else {
			operands = slices.Replace(operands, i, j, merged)
		}
	}
	if len(operands) == 0 {
		// The key is gone: the model must agree that nothing is left.
		if w := wantFull(s.ops); len(w) != 0 {
			s.fail("key deleted by a base merge, but the model holds %v", w)
		}
		return
	}
	out, del := s.merge(operands, true)
	s.check("final merge", out, del, s.ops, true)
}

// splitOps cuts ops into operands at random points. Some operands are empty.
func splitOps(rng *rand.Rand, ops []refOp) []simOperand {
	var operands []simOperand
	start := 0
	for start < len(ops) || len(operands) == 0 {
		n := 0
		if start < len(ops) {
			n = rng.IntN(len(ops) - start + 1)
			if n == 0 && rng.IntN(4) != 0 {
				n = 1
			}
		}
		operands = append(operands, simOperand{b: encodeOps(ops[start : start+n]), lo: start, hi: start + n})
		start += n
	}
	return operands
}

func TestIDMergerModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x1d5, 0x3e7))
	// ID bases: small IDs (one varint byte), IDs around varint byte
	// boundaries, and the largest IDs an operation can encode.
	bases := []uint64{0, 0, 60, 8190, 1 << 55, math.MaxUint64>>1 - 16}
	iters := 10000
	if !lane.Full(t, "10,000 merges, 1,000 under -short") {
		iters = 1000
	}
	for iter := range iters {
		base := bases[rng.IntN(len(bases))]
		span := 1 + rng.IntN(10)
		ops := make([]refOp, rng.IntN(40))
		for i := range ops {
			ops[i] = refOp{id: base + uint64(rng.IntN(span)), del: rng.IntN(3) == 0}
		}
		s := &sim{t: t, rng: rng, ops: ops, canonical: true}
		s.log = append(s.log, fmt.Sprintf("iteration %d", iter))
		s.run(splitOps(rng, ops))
	}
}
