package pebble_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
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

// diffValueKey identifies a value for comparison.
func diffValueKey(v store.Value) string {
	return hex.EncodeToString([]byte(v.ProviderID)) + "|" + hex.EncodeToString(v.ContextID) + "|" + hex.EncodeToString(v.Metadata)
}

func diffValueSet(vs []store.Value) string {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = diffValueKey(v)
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

func diffAll(t *testing.T, seq iter.Seq2[store.Entry, error]) map[string]string {
	t.Helper()
	all := map[string]string{}
	for e, err := range seq {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		k := string(e.Multihash)
		if _, dup := all[k]; dup {
			t.Fatalf("All yielded %x twice", []byte(e.Multihash))
		}
		if len(e.Values) == 0 {
			t.Fatalf("All yielded %x with no values", []byte(e.Multihash))
		}
		all[k] = diffValueSet(e.Values)
	}
	return all
}

// TestDifferential runs one random sequence of writes, removals, metadata
// updates, sweeps, flushes, compactions and reopenings against a Pebble store
// and against the memory store (the reference), and compares them after every
// step: the results of every call, and what Get returns (as sets of values)
// for some multihashes, or for all of them and everything All yields after
// compactions, reopenings and every tenth step. Pebble runs with options
// small enough that its flushes and compactions merge ID lists both with and
// without the base, and mergeAudit checks each of those merges as it happens;
// the test fails if they did not happen.
func TestDifferential(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20260101, 42))
	dir := t.TempDir()
	audit := &mergeAudit{}
	open := func() *pebble.Store {
		s, err := pebble.Open(dir, pebble.WithOptions(smallOptions(audit)), pebble.WithCacheSize(1<<20))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}
	s := open()
	defer func() { s.Close() }()
	ref := memory.New()
	defer ref.Close()

	mhs := storetest.Multihashes("differential", 200)
	provs := []peer.ID{storetest.PeerID("a"), storetest.PeerID("b"), storetest.PeerID("c")}
	ctxIDs := [][]byte{[]byte("c1"), []byte("c2"), []byte("c3")}
	mds := [][]byte{nil, []byte("md1"), []byte("md2"), bytes.Repeat([]byte("m"), 300)}
	pick := func() (peer.ID, []byte) { return provs[rng.IntN(len(provs))], ctxIDs[rng.IntN(len(ctxIDs))] }
	subset := func() []multihash.Multihash {
		switch rng.IntN(4) {
		case 0: // a run
			i := rng.IntN(len(mhs))
			return mhs[i : i+1+rng.IntN(len(mhs)-i)]
		default: // a random sample, possibly with repeats
			out := make([]multihash.Multihash, 1+rng.IntN(60))
			for i := range out {
				out[i] = mhs[rng.IntN(len(mhs))]
			}
			return out
		}
	}

	var (
		compactions, rewrites, flushes int64
		log                            []string
	)
	addMetrics := func() {
		m := s.Pebble().Metrics()
		compactions += m.Compact.Count
		rewrites += m.Compact.DefaultCount + m.Compact.MultiLevelCount
		flushes += m.Flush.Count
	}
	both := func(what string, fs, fr func(store.Store) error) {
		t.Helper()
		es, er := fs(s), fr(ref)
		if (es == nil) != (er == nil) || (es != nil && errors.Is(es, store.ErrNotFound) != errors.Is(er, store.ErrNotFound)) {
			t.Fatalf("step %d %s: pebble: %v, memory: %v\nlog:\n%s", len(log), what, es, er, strings.Join(log, "\n"))
		}
		if er != nil && !errors.Is(er, store.ErrNotFound) {
			t.Fatalf("step %d %s: %v", len(log), what, er)
		}
	}
	same := func(what string, f func(store.Store) error) { both(what, f, f) }

	// check compares Get of some multihashes, or with full of every one,
	// and then All too. Checking everything after every step would take
	// too long under -race; a wrong result rarely heals, so checking
	// everything every few steps, and after each compaction and reopen,
	// loses little.
	check := func(step int, what string, full bool) {
		t.Helper()
		sample := mhs
		if !full {
			sample = make([]multihash.Multihash, 20)
			for i := range sample {
				sample[i] = mhs[rng.IntN(len(mhs))]
			}
		}
		for _, mh := range sample {
			gs, err := s.Get(ctx, mh)
			if err != nil {
				t.Fatalf("step %d: Get: %v", step, err)
			}
			gr, err := ref.Get(ctx, mh)
			if err != nil {
				t.Fatalf("step %d: memory Get: %v", step, err)
			}
			if a, b := diffValueSet(gs), diffValueSet(gr); a != b {
				t.Fatalf("step %d (%s): Get(%x):\npebble: %s\nmemory: %s\nlog:\n%s", step, what, []byte(mh), a, b, strings.Join(log, "\n"))
			}
		}
		if !full {
			return
		}
		as, ar := diffAll(t, s.All(ctx)), diffAll(t, ref.All(ctx))
		for k, v := range ar {
			if as[k] != v {
				t.Fatalf("step %d (%s): All, %x:\npebble: %q\nmemory: %q\nlog:\n%s", step, what, k, as[k], v, strings.Join(log, "\n"))
			}
		}
		for k, v := range as {
			if _, ok := ar[k]; !ok {
				t.Fatalf("step %d (%s): All yields %x = %q that memory does not\nlog:\n%s", step, what, k, v, strings.Join(log, "\n"))
			}
		}
	}

	steps := 260
	if testing.Short() {
		steps = 100
	}
	for step := range steps {
		var what string
		full := false
		switch r := rng.IntN(100); {
		case r < 35:
			p, c := pick()
			v := store.Value{ProviderID: p, ContextID: c, Metadata: mds[rng.IntN(len(mds))]}
			sub := subset()
			what = fmt.Sprintf("Put(%s, %s, %s, %d mhs)", p.String()[:6], c, v.Metadata[:min(len(v.Metadata), 3)], len(sub))
			same(what, func(st store.Store) error { return st.Put(ctx, v, sub...) })
		case r < 52:
			p, c := pick()
			sub := subset()
			what = fmt.Sprintf("Remove(%s, %s, %d mhs)", p.String()[:6], c, len(sub))
			same(what, func(st store.Store) error { return st.Remove(ctx, p, c, sub...) })
		case r < 57:
			p, c := pick()
			what = fmt.Sprintf("RemoveProviderContext(%s, %s)", p.String()[:6], c)
			same(what, func(st store.Store) error { return st.RemoveProviderContext(ctx, p, c) })
		case r < 59:
			p, _ := pick()
			what = fmt.Sprintf("RemoveProvider(%s)", p.String()[:6])
			same(what, func(st store.Store) error { return st.RemoveProvider(ctx, p) })
		case r < 67:
			p, c := pick()
			md := mds[rng.IntN(len(mds))]
			what = fmt.Sprintf("UpdateMetadata(%s, %s, %s)", p.String()[:6], c, md[:min(len(md), 3)])
			same(what, func(st store.Store) error { return st.UpdateMetadata(ctx, p, c, md) })
		case r < 73:
			var ns, nr int64
			what = "Sweep"
			both(what, func(st store.Store) (err error) {
				ns, err = st.(store.Sweeper).Sweep(ctx)
				return err
			}, func(st store.Store) (err error) {
				nr, err = st.(store.Sweeper).Sweep(ctx)
				return err
			})
			what += fmt.Sprintf(" = %d", ns)
			if ns != nr {
				t.Fatalf("step %d: Sweep removed %d entries, memory removed %d\nlog:\n%s", step, ns, nr, strings.Join(log, "\n"))
			}
		case r < 84:
			what = "pebble Flush"
			if err := s.Pebble().Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
		case r < 90:
			what = "pebble Compact"
			full = true
			// Flush first, so that what runs during Compact is compaction
			// only and the audit's counts say so.
			if err := s.Pebble().Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
			audit.inCompact.Store(true)
			err := s.Pebble().Compact(ctx, []byte{0}, []byte{0xff}, true)
			audit.inCompact.Store(false)
			if err != nil {
				t.Fatalf("compact: %v", err)
			}
		case r < 95:
			what = "reopen"
			full = true
			addMetrics()
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			s = open()
		default:
			what = "Flush"
			same(what, func(st store.Store) error { return st.Flush(ctx) })
		}
		log = append(log, fmt.Sprintf("%d: %s", step, what))
		if err := audit.err(); err != nil {
			t.Fatalf("step %d %s: merge operator: %v\nlog:\n%s", step, what, err, strings.Join(log, "\n"))
		}

		check(step, what, full || step%10 == 0)
	}
	check(steps, "end", true)
	addMetrics()
	if err := audit.err(); err != nil {
		t.Fatalf("merge operator: %v", err)
	}
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
