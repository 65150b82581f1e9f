package leveldb_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/leveldb"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

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
// updates, sweeps and reopenings against a LevelDB store and against the
// memory store (the reference), and compares them after every step: the
// results of every call, and what Get returns (as sets of values) for some
// multihashes, or for all of them and everything All yields after reopenings,
// sweeps and every tenth step.
func TestDifferential(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20260101, 43))
	dir := t.TempDir()
	open := func() *leveldb.Store {
		s, err := leveldb.Open(dir, nil)
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

	var log []string
	both := func(what string, fs, fr func(store.Store) error) {
		t.Helper()
		es, er := fs(s), fr(ref)
		if (es == nil) != (er == nil) || (es != nil && errors.Is(es, store.ErrNotFound) != errors.Is(er, store.ErrNotFound)) {
			t.Fatalf("step %d %s: leveldb: %v, memory: %v\nlog:\n%s", len(log), what, es, er, strings.Join(log, "\n"))
		}
		if er != nil && !errors.Is(er, store.ErrNotFound) {
			t.Fatalf("step %d %s: %v", len(log), what, er)
		}
	}
	same := func(what string, f func(store.Store) error) { both(what, f, f) }

	// check compares Get of some multihashes, or with full of every one,
	// and then All too; see TestDifferential in package pebble.
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
				t.Fatalf("step %d (%s): Get(%x):\nleveldb: %s\nmemory:  %s\nlog:\n%s", step, what, []byte(mh), a, b, strings.Join(log, "\n"))
			}
		}
		if !full {
			return
		}
		as, ar := diffAll(t, s.All(ctx)), diffAll(t, ref.All(ctx))
		for k, v := range ar {
			if as[k] != v {
				t.Fatalf("step %d (%s): All, %x:\nleveldb: %q\nmemory:  %q\nlog:\n%s", step, what, k, as[k], v, strings.Join(log, "\n"))
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
	reopens, swept := 0, int64(0)
	for step := range steps {
		var what string
		full := false
		switch r := rng.IntN(100); {
		case r < 38:
			p, c := pick()
			v := store.Value{ProviderID: p, ContextID: c, Metadata: mds[rng.IntN(len(mds))]}
			sub := subset()
			what = fmt.Sprintf("Put(%s, %s, %s, %d mhs)", p.String()[:6], c, v.Metadata[:min(len(v.Metadata), 3)], len(sub))
			same(what, func(st store.Store) error { return st.Put(ctx, v, sub...) })
		case r < 58:
			p, c := pick()
			sub := subset()
			what = fmt.Sprintf("Remove(%s, %s, %d mhs)", p.String()[:6], c, len(sub))
			same(what, func(st store.Store) error { return st.Remove(ctx, p, c, sub...) })
		case r < 64:
			p, c := pick()
			what = fmt.Sprintf("RemoveProviderContext(%s, %s)", p.String()[:6], c)
			same(what, func(st store.Store) error { return st.RemoveProviderContext(ctx, p, c) })
		case r < 66:
			p, _ := pick()
			what = fmt.Sprintf("RemoveProvider(%s)", p.String()[:6])
			same(what, func(st store.Store) error { return st.RemoveProvider(ctx, p) })
		case r < 76:
			p, c := pick()
			md := mds[rng.IntN(len(mds))]
			what = fmt.Sprintf("UpdateMetadata(%s, %s, %s)", p.String()[:6], c, md[:min(len(md), 3)])
			same(what, func(st store.Store) error { return st.UpdateMetadata(ctx, p, c, md) })
		case r < 84:
			var ns, nr int64
			what = "Sweep"
			full = true
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
			swept += ns
		case r < 92:
			what = "reopen"
			full = true
			reopens++
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			s = open()
		default:
			what = "Flush"
			same(what, func(st store.Store) error { return st.Flush(ctx) })
		}
		log = append(log, fmt.Sprintf("%d: %s", step, what))
		check(step, what, full || step%10 == 0)
	}
	check(steps, "end", true)
	t.Logf("leveldb: %d reopenings, %d entries swept", reopens, swept)
	if reopens == 0 || swept == 0 {
		t.Errorf("the test must reopen the store and sweep entries")
	}
}
