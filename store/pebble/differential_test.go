package pebble_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
)

// mergeAudit sits between Pebble and the store's merge operator. It hands
// every call on unchanged (offering Pebble exactly the interfaces the store's
// merger has), keeps a copy of the operands, and checks each result against a
// model of the ID lists, so that a wrong merge is caught where it happens (in
// a flush or compaction), not only when it is read. It also counts merges by
// includesBase, to show that the test reached them.
type mergeAudit struct {
	partial, full               atomic.Int64 // merges by includesBase
	compactPartial, compactFull atomic.Int64 // of those, run during a manual compaction
	emptied, compactEmptied     atomic.Int64 // merges with the base that left no ID

	inCompact atomic.Bool

	mu      sync.Mutex
	failure string
}

func (a *mergeAudit) fail(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failure == "" {
		a.failure = fmt.Sprintf(format, args...)
	}
}

// verify is a DifferentialConfig.Verify: the audit's first error.
func (a *mergeAudit) verify(store.Store) error {
	if err := a.err(); err != nil {
		return fmt.Errorf("merge operator: %w", err)
	}
	return nil
}

func (a *mergeAudit) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failure != "" {
		return errors.New(a.failure)
	}
	return nil
}

func (a *mergeAudit) merger() *cpebble.Merger {
	return &cpebble.Merger{
		Name: pebble.Merger.Name,
		Merge: func(key, value []byte) (cpebble.ValueMerger, error) {
			vm, err := pebble.Merger.Merge(key, value)
			if err != nil {
				return nil, err
			}
			am := &auditedMerger{inner: vm, audit: a, operands: [][]byte{bytes.Clone(value)}}
			if dvm, ok := vm.(cpebble.DeletableValueMerger); ok {
				return &deletableAuditedMerger{am, dvm}, nil
			}
			return am, nil
		},
	}
}

type auditedMerger struct {
	inner    cpebble.ValueMerger
	audit    *mergeAudit
	operands [][]byte // oldest first
}

func (m *auditedMerger) MergeNewer(v []byte) error {
	m.operands = append(m.operands, bytes.Clone(v))
	return m.inner.MergeNewer(v)
}

func (m *auditedMerger) MergeOlder(v []byte) error {
	m.operands = slices.Insert(m.operands, 0, bytes.Clone(v))
	return m.inner.MergeOlder(v)
}

func (m *auditedMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	v, c, err := m.inner.Finish(includesBase)
	m.check(includesBase, v, false, false, err)
	return v, c, err
}

type deletableAuditedMerger struct {
	*auditedMerger
	inner cpebble.DeletableValueMerger
}

func (m *deletableAuditedMerger) DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error) {
	v, del, c, err := m.inner.DeletableFinish(includesBase)
	m.check(includesBase, v, true, del, err)
	return v, del, c, err
}

type listOp struct {
	id  uint64
	del bool
}

func parseList(v []byte) ([]listOp, bool) {
	var ops []listOp
	for len(v) > 0 {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return nil, false
		}
		ops = append(ops, listOp{x >> 1, x&1 == 1})
		v = v[n:]
	}
	return ops, true
}

func (m *auditedMerger) check(includesBase bool, v []byte, deletable, del bool, err error) {
	a := m.audit
	compacting := a.inCompact.Load()
	if includesBase {
		a.full.Add(1)
		if compacting {
			a.compactFull.Add(1)
		}
	} else {
		a.partial.Add(1)
		if compacting {
			a.compactPartial.Add(1)
		}
	}
	if err != nil {
		a.fail("merge of %x failed: %v", m.operands, err)
		return
	}
	// The model: the newest operation on each ID wins; with the base, IDs
	// whose newest operation is a deletion are gone.
	newest := map[uint64]bool{}
	for _, o := range m.operands {
		ops, ok := parseList(o)
		if !ok {
			a.fail("operand %x does not parse", o)
			return
		}
		for _, op := range ops {
			newest[op.id] = op.del
		}
	}
	var want []listOp
	for id, d := range newest {
		if !includesBase || !d {
			want = append(want, listOp{id, d})
		}
	}
	slices.SortFunc(want, func(x, y listOp) int {
		switch {
		case x.id < y.id:
			return -1
		case x.id > y.id:
			return 1
		}
		return 0
	})
	got, ok := parseList(v)
	if !ok || !slices.Equal(got, want) {
		a.fail("merge of %x (includesBase=%v) = %x, want %v", m.operands, includesBase, v, want)
	}
	emptied := includesBase && len(want) == 0
	if deletable && del != emptied {
		a.fail("merge of %x (includesBase=%v): delete = %v, want %v", m.operands, includesBase, del, emptied)
	}
	if emptied {
		a.emptied.Add(1)
		if compacting {
			a.compactEmptied.Add(1)
		}
	}
}

// smallOptions returns options that make a few hundred kilobytes of writes
// flush and compact through several levels: small memtables, files and
// level sizes, and L0 compacted at once.
func smallOptions(a *mergeAudit) *cpebble.Options {
	o := pebble.DefaultOptions()
	o.MemTableSize = 256 << 10
	o.MemTableStopWritesThreshold = 4
	o.L0CompactionThreshold = 1
	o.L0StopWritesThreshold = 16
	o.LBaseMaxBytes = 4 << 10
	for i := range o.TargetFileSizes {
		o.TargetFileSizes[i] = 8 << 10
	}
	o.Merger = a.merger()
	return o
}

// TestDifferential runs storetest.RunDifferential against a Pebble store,
// with forced flushes and compactions as its Chaos. Pebble runs with options
// small enough that its flushes and compactions merge ID lists both with and
// without the base, and mergeAudit checks each of those merges as it happens;
// the test fails if they did not happen.
func TestDifferential(t *testing.T) {
	ctx := context.Background()
	audit := &mergeAudit{}
	var compactions, rewrites, flushes int64
	storetest.RunDifferential(t, storetest.DifferentialConfig{
		Open: func(dir string) (store.Store, error) {
			s, err := pebble.Open(dir, pebble.WithOptions(smallOptions(audit)), pebble.WithCacheSize(1<<20))
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Model: func() store.Store { return memory.New() },
		Seed:  20260101,
		Chaos: func(t *testing.T, s store.Store, r *rand.Rand) (string, bool) {
			db := s.(*pebble.Store).Pebble()
			// Flush first, so that what runs during Compact is compaction
			// only and the audit's counts say so.
			if err := db.Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
			if r.IntN(3) < 2 {
				return "pebble Flush", false
			}
			audit.inCompact.Store(true)
			err := db.Compact(ctx, []byte{0}, []byte{0xff}, true)
			audit.inCompact.Store(false)
			if err != nil {
				t.Fatalf("compact: %v", err)
			}
			return "pebble Compact", true
		},
		Verify: audit.verify,
		BeforeClose: func(s store.Store) {
			m := s.(*pebble.Store).Pebble().Metrics()
			compactions += m.Compact.Count
			rewrites += m.Compact.DefaultCount + m.Compact.MultiLevelCount
			flushes += m.Flush.Count
		},
	})
	t.Logf("pebble: %d flushes, %d compactions (%d rewriting); merges: %d without base (%d in compactions), %d with base (%d in compactions), %d emptied lists (%d in compactions)",
		flushes, compactions, rewrites, audit.partial.Load(), audit.compactPartial.Load(), audit.full.Load(), audit.compactFull.Load(),
		audit.emptied.Load(), audit.compactEmptied.Load())
	if rewrites == 0 || flushes == 0 {
		t.Errorf("the test ran %d flushes and %d rewriting compactions; it must run both to test merging in them", flushes, rewrites)
	}
	if audit.compactPartial.Load() == 0 || audit.compactFull.Load() == 0 {
		t.Errorf("compactions merged %d times without the base and %d times with it; the test must reach both", audit.compactPartial.Load(), audit.compactFull.Load())
	}
	if audit.compactEmptied.Load() == 0 {
		t.Errorf("no compaction emptied a list; the test must reach that (see TestEmptiedListCompaction)")
	}
}

// TestEmptiedListCompaction is the regression test for the fix described at
// kv.IDMerger: a compaction that merges removals into a list it has already
// compacted to the last level (a SET there), leaving it empty. When the
// merger reported such lists as deletable, Pebble v2.1.7's compaction
// iterator panicked here ("compaction iterator has skip=true, but iterator is
// at iterPosNext"), which took the process down.
func TestEmptiedListCompaction(t *testing.T) {
	ctx := context.Background()
	s, err := pebble.Open(t.TempDir(), pebble.WithCacheSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := store.Value{ProviderID: storetest.PeerID("p"), ContextID: []byte("ctx"), Metadata: []byte("md")}
	mhs := storetest.Multihashes("emptied", 3)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two overlapping flushed files, so that compacting them rewrites the
	// lists into the last level as SETs instead of moving the file down.
	for range 2 {
		must(s.Put(ctx, v, mhs...))
		must(s.Pebble().Flush())
	}
	must(s.Pebble().Compact(ctx, []byte{0}, []byte{0xff}, false))
	must(s.Remove(ctx, v.ProviderID, v.ContextID, mhs[0], mhs[1]))
	must(s.Pebble().Flush())
	must(s.Pebble().Compact(ctx, []byte{0}, []byte{0xff}, false))
	for i, mh := range mhs {
		got, err := s.Get(ctx, mh)
		must(err)
		if want := i == 2; (len(got) == 1) != want || len(got) > 1 {
			t.Fatalf("Get(mhs[%d]) = %v after the compaction", i, got)
		}
	}
	n := 0
	for _, err := range s.All(ctx) {
		must(err)
		n++
	}
	if n != 1 {
		t.Fatalf("All yields %d multihashes, want 1", n)
	}
}

// TestDifferentialSortedRuns is TestDifferential with sorted runs small
// enough that a few steps fill one: every index write reaches Pebble as an
// ingested table or a committed batch of combined operands, and Chaos also
// Flushes the store, which applies whatever run is gathering.
func TestDifferentialSortedRuns(t *testing.T) {
	ctx := context.Background()
	audit := &mergeAudit{}
	var ingested uint64
	storetest.RunDifferential(t, storetest.DifferentialConfig{
		Open: func(dir string) (store.Store, error) {
			return pebble.Open(dir, pebble.WithOptions(smallOptions(audit)), pebble.WithSortedRuns(6<<10), pebble.WithCacheSize(1<<20))
		},
		Model: func() store.Store { return memory.New() },
		Seed:  20261126,
		Chaos: func(t *testing.T, s store.Store, r *rand.Rand) (string, bool) {
			if err := s.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			if r.IntN(2) == 0 {
				return "store Flush", false
			}
			db := s.(*pebble.Store).Pebble()
			if err := db.Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
				t.Fatalf("compact: %v", err)
			}
			return "pebble Compact", true
		},
		Verify: audit.verify,
		BeforeClose: func(s store.Store) {
			for _, l := range s.(*pebble.Store).Pebble().Metrics().Levels {
				ingested += l.TablesIngested
			}
		},
	})
	if ingested == 0 {
		t.Errorf("no table was ingested; the test must apply runs as tables")
	}
	t.Logf("%d tables ingested", ingested)
}
