package kv

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
)

// IDMerger combines the merge operands of one multihash key of the [Merged]
// layout. An operand is a sequence of operations uvarint(id<<1 | del); the
// result is the same kind of sequence, normalized: ascending IDs, one
// operation each (the newest), and no deletions once the merge includes the
// oldest value of the key (nothing older is left for them to cancel).
//
// Its methods match Pebble's ValueMerger, so an engine adapter can hand it to
// Pebble as is. A merger is pooled: the io.Closer returned by Finish puts it
// back.
//
// It deliberately does not implement Pebble's DeletableValueMerger: a list
// emptied by removals stays as an empty value rather than being dropped.
// Pebble v2.1.7 mishandles a deletion reported by a merge in a compaction:
// when the merge has consumed an older SET of the key (the base, as a
// bottommost compaction leaves every list), the compaction iterator panics
// ("compaction iterator has skip=true, but iterator is at iterPosNext") on a
// background goroutine, crashing the process.
type IDMerger struct {
	buf   []byte
	spans []span // operands oldest first, once ordered
	older []span // operands added by MergeOlder, newest first
	out   []byte
	ops   []op
}

type span struct{ start, end int }

type op struct {
	id  uint64
	seq int
	del bool
}

var mergerPool = sync.Pool{New: func() any { return new(IDMerger) }}

// NewIDMerger starts a merge with one operand. key is not used.
func NewIDMerger(_, value []byte) (*IDMerger, error) {
	m := mergerPool.Get().(*IDMerger)
	m.spans = append(m.spans, m.add(value))
	return m, nil
}

func (m *IDMerger) add(v []byte) span {
	s := span{len(m.buf), len(m.buf) + len(v)}
	m.buf = append(m.buf, v...)
	return s
}

// MergeNewer adds an operand newer than all added so far.
func (m *IDMerger) MergeNewer(value []byte) error {
	m.spans = append(m.spans, m.add(value))
	return nil
}

// MergeOlder adds an operand older than all added so far.
func (m *IDMerger) MergeOlder(value []byte) error {
	m.older = append(m.older, m.add(value))
	return nil
}

// Finish returns the merged value; it stays valid until the closer is closed.
func (m *IDMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	v, _, c, err := m.deletableFinish(includesBase)
	return v, c, err
}

// deletableFinish is Finish that also reports when the key could be deleted:
// the merge includes its oldest value and no ID is left. It is unexported so
// that Pebble does not see a DeletableValueMerger (see [IDMerger]).
func (m *IDMerger) deletableFinish(includesBase bool) ([]byte, bool, io.Closer, error) {
	if len(m.older) == 0 && len(m.spans) == 1 {
		// One operand: usually already normalized, as when a Put's operand
		// is flushed or compacted alone.
		v := m.buf[m.spans[0].start:m.spans[0].end]
		if ok, empty := normalized(v, includesBase); ok {
			return v, includesBase && empty, m, nil
		}
	}
	m.ops = m.ops[:0]
	seq := 0
	parse := func(s span) error {
		v := m.buf[s.start:s.end]
		for len(v) > 0 {
			x, n := binary.Uvarint(v)
			if n <= 0 {
				return fmt.Errorf("%w: bad ID list operand", errCorrupt)
			}
			v = v[n:]
			m.ops = append(m.ops, op{id: x >> 1, seq: seq, del: x&1 == 1})
			seq++
		}
		return nil
	}
	for i := len(m.older) - 1; i >= 0; i-- {
		if err := parse(m.older[i]); err != nil {
			return nil, false, m, err
		}
	}
	for _, s := range m.spans {
		if err := parse(s); err != nil {
			return nil, false, m, err
		}
	}
	slices.SortFunc(m.ops, func(a, b op) int {
		if a.id != b.id {
			if a.id < b.id {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	m.out = m.out[:0]
	for i, o := range m.ops {
		if i+1 < len(m.ops) && m.ops[i+1].id == o.id {
			continue // a newer operation on the same ID wins
		}
		if o.del && includesBase {
			continue
		}
		m.out = appendOp(m.out, o.id, o.del)
	}
	return m.out, includesBase && len(m.out) == 0, m, nil
}

// normalized reports whether v is already a normalized list (ascending IDs,
// and no deletions if base is set), and whether it is empty.
func normalized(v []byte, base bool) (ok, empty bool) {
	first, last := true, uint64(0)
	for len(v) > 0 {
		x, n := binary.Uvarint(v)
		if n <= 0 || (base && x&1 == 1) || (!first && x>>1 <= last) {
			return false, false
		}
		first, last, v = false, x>>1, v[n:]
	}
	return true, first
}

// Close returns the merger to its pool.
func (m *IDMerger) Close() error {
	if cap(m.buf) > 64<<10 || cap(m.ops) > 4096 {
		return nil // let an outsized merger go
	}
	m.buf, m.spans, m.older, m.out, m.ops = m.buf[:0], m.spans[:0], m.older[:0], m.out[:0], m.ops[:0]
	mergerPool.Put(m)
	return nil
}
