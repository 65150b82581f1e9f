package storetest

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

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// DifferentialConfig configures [RunDifferential].
type DifferentialConfig struct {
	// Open opens (creating if needed) the store under test in dir. It is
	// called at the start and again at every reopening, after Close, always
	// with the same dir.
	Open func(dir string) (store.Store, error)

	// Model returns the reference store, such as memory.New. It is called
	// once.
	Model func() store.Store

	// Steps is the length of the sequence: 0 means 260, or 100 with -short.
	Steps int

	// Seed seeds the sequence: the same seed gives the same operations.
	Seed uint64

	// Chaos, if set, takes about one step in six. It is called with the
	// store as open then (after a reopening that is a new value) and the
	// sequence's random source, for engine-specific events that must not
	// change what the store holds, such as forced flushes and compactions.
	// It returns a short name for the log, and whether to compare everything
	// after it rather than a sample.
	Chaos func(t *testing.T, s store.Store, r *rand.Rand) (what string, full bool)

	// Verify, if set, is called with the open store after every step's
	// operation (before the comparison) and again after the final
	// comparison. An error fails the test with the step and the log.
	Verify func(s store.Store) error

	// BeforeClose, if set, is called with the store just before each Close
	// at a reopening and at the end, to read what Close discards (such as
	// engine metrics).
	BeforeClose func(s store.Store)
}

// RunDifferential runs a random sequence of store operations (puts,
// removals, metadata updates, sweeps, flushes, reopenings, and cfg.Chaos)
// against a store opened by cfg.Open and against cfg.Model, the reference,
// and compares them after every step. Every call must succeed or fail alike
// on both (ErrNotFound on both or neither) and sweeps must remove as many
// entries; then Get must return the same set of values for a sample of
// multihashes, or, every tenth step and after sweeps, reopenings and Chaos
// steps that ask for it, for every multihash, and All must yield the same
// entries, and every context's population (store.Sampler, when both keep
// them) must be the same. Both stores must implement [store.Sweeper]. The
// test fails if the sequence never reopened the store or never swept an
// entry.
//
// Comparing everything after every step would take too long under -race; a
// wrong result rarely heals, so comparing everything every few steps loses
// little.
func RunDifferential(t *testing.T, cfg DifferentialConfig) {
	if cfg.Open == nil || cfg.Model == nil {
		t.Fatal("RunDifferential: Open and Model must be set")
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	steps := cfg.Steps
	if steps == 0 {
		steps = 260
		if !lane.Full(t, "260 steps, 100 under -short") {
			steps = 100
		}
	}

	dir := t.TempDir()
	var s store.Store
	open := func() {
		t.Helper()
		var err error
		if s, err = cfg.Open(dir); err != nil {
			s = nil
			t.Fatalf("open: %v", err)
		}
		if _, ok := s.(store.Sweeper); !ok {
			t.Fatalf("the store, a %T, is not a store.Sweeper", s)
		}
	}
	closeStore := func() error {
		if cfg.BeforeClose != nil {
			cfg.BeforeClose(s)
		}
		err := s.Close()
		s = nil
		return err
	}
	open()
	defer func() {
		if s != nil {
			_ = closeStore()
		}
	}()
	ref := cfg.Model()
	defer ref.Close()
	if _, ok := ref.(store.Sweeper); !ok {
		t.Fatalf("the model, a %T, is not a store.Sweeper", ref)
	}

	var log []string
	fatal := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nseed %d, log:\n%s", append(args, cfg.Seed, strings.Join(log, "\n"))...)
	}

	mhs := Multihashes("differential", 200)
	provs := []peer.ID{PeerID("a"), PeerID("b"), PeerID("c")}
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

	// both runs fs on the store and fr on the model and compares the errors.
	both := func(what string, fs, fr func(store.Store) error) {
		t.Helper()
		es, er := fs(s), fr(ref)
		if (es == nil) != (er == nil) || (es != nil && errors.Is(es, store.ErrNotFound) != errors.Is(er, store.ErrNotFound)) {
			fatal("step %d %s: store: %v, model: %v", len(log), what, es, er)
		}
		if er != nil && !errors.Is(er, store.ErrNotFound) {
			fatal("step %d %s: %v", len(log), what, er)
		}
	}
	same := func(what string, f func(store.Store) error) { both(what, f, f) }

	// check compares Get of a sample of the multihashes, or with full of
	// every one, and then All too.
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
				fatal("step %d: Get: %v", step, err)
			}
			gr, err := ref.Get(ctx, mh)
			if err != nil {
				fatal("step %d: model Get: %v", step, err)
			}
			if a, b := diffValueSet(gs), diffValueSet(gr); a != b {
				fatal("step %d (%s): Get(%x):\nstore: %s\nmodel: %s", step, what, []byte(mh), a, b)
			}
		}
		if !full {
			return
		}
		// Every context's population is the same in both, when both
		// keep them: Sample gives one answer in every backend.
		ss, oks := s.(store.Sampler)
		sr, okr := ref.(store.Sampler)
		for _, p := range provs {
			for _, c := range ctxIDs {
				if !oks || !okr {
					break
				}
				ps, es := Population(ctx, ss, p, c)
				pr, er := Population(ctx, sr, p, c)
				if (es == nil) != (er == nil) || (er != nil && !errors.Is(er, store.ErrNotFound)) || (es != nil && !errors.Is(es, store.ErrNotFound)) {
					fatal("step %d (%s): Sample(%s, %s): store: %v, model: %v", step, what, p.String()[:6], c, es, er)
				}
				if !sameMultihashes(ps, pr) {
					fatal("step %d (%s): the population of (%s, %s): store has %d multihashes, model %d, or in another order", step, what, p.String()[:6], c, len(ps), len(pr))
				}
			}
		}
		as, ar := diffAll(t, s.All(ctx)), diffAll(t, ref.All(ctx))
		for k, v := range ar {
			if as[k] != v {
				fatal("step %d (%s): All, %x:\nstore: %q\nmodel: %q", step, what, k, as[k], v)
			}
		}
		for k, v := range as {
			if _, ok := ar[k]; !ok {
				fatal("step %d (%s): All yields %x = %q that the model does not", step, what, k, v)
			}
		}
	}
	verify := func(step int, what string) {
		t.Helper()
		if cfg.Verify == nil {
			return
		}
		if err := cfg.Verify(s); err != nil {
			fatal("step %d %s: %v", step, what, err)
		}
	}

	// The store's operations take r in [0, 100); Chaos, if set, takes
	// [100, 120).
	n := 100
	if cfg.Chaos != nil {
		n = 120
	}
	reopens, chaos, swept := 0, 0, int64(0)
	for step := range steps {
		var what string
		full := false
		switch r := rng.IntN(n); {
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
				fatal("step %d: Sweep removed %d entries, the model removed %d", step, ns, nr)
			}
			swept += ns
		case r < 92:
			what = "reopen"
			full = true
			reopens++
			if err := closeStore(); err != nil {
				fatal("step %d: close: %v", step, err)
			}
			open()
		case r < 100:
			what = "Flush"
			same(what, func(st store.Store) error { return st.Flush(ctx) })
		default:
			chaos++
			what, full = cfg.Chaos(t, s, rng)
		}
		log = append(log, fmt.Sprintf("%d: %s", step, what))
		verify(step, what)
		check(step, what, full || step%10 == 0)
	}
	check(steps, "end", true)
	verify(steps, "end")
	if err := closeStore(); err != nil {
		t.Errorf("close: %v", err)
	}
	t.Logf("differential: %d steps, %d reopenings, %d chaos steps, %d entries swept", steps, reopens, chaos, swept)
	if reopens == 0 || swept == 0 {
		t.Errorf("the sequence must reopen the store and sweep entries; make Steps larger or change Seed")
	}
}

// diffValueSet returns vs as a string that is the same for the same set of
// values in any order.
func diffValueSet(vs []store.Value) string {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = hex.EncodeToString([]byte(v.ProviderID)) + "|" + hex.EncodeToString(v.ContextID) + "|" + hex.EncodeToString(v.Metadata)
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// diffAll collects what seq yields by multihash, each as a diffValueSet,
// and fails on errors, repeated multihashes and entries without values.
func diffAll(t *testing.T, seq iter.Seq2[store.Entry, error]) map[string]string {
	t.Helper()
	all := map[string]string{}
	for e, err := range seq {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		k := string(store.IndexKey(e.Multihash)) // the form a store keyed on digest prefixes yields
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
