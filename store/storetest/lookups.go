package storetest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/multiformats/go-multihash"
)

// lookupStep is one write of testLookupsWhileWriting's cycle, and the
// answer it leaves for its key: context ID to metadata.
type lookupStep struct {
	do    func(ctx context.Context, s store.Store, k, cycle int) error
	after func(cycle int) map[string]string
}

// lookupCycle writes one key through every kind of write that changes its
// answer: a Put, a metadata update, a Put of a second context, the removal
// of a context, the removal of the key from a context, and the removal of
// the provider. Context IDs carry the cycle, so that no answer of one
// cycle is an answer of another, except the empty one.
var lookupCycle = []lookupStep{
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.Put(ctx, lookupValue(k, "a", c, "1"), lookupKey(k))
		},
		after: func(c int) map[string]string { return map[string]string{lookupCtx("a", c): "1"} },
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := lookupValue(k, "a", c, "2")
			return s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, v.Metadata)
		},
		after: func(c int) map[string]string { return map[string]string{lookupCtx("a", c): "2"} },
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.Put(ctx, lookupValue(k, "b", c, "1"), lookupKey(k))
		},
		after: func(c int) map[string]string {
			return map[string]string{lookupCtx("a", c): "2", lookupCtx("b", c): "1"}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := lookupValue(k, "a", c, "")
			return s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID)
		},
		after: func(c int) map[string]string { return map[string]string{lookupCtx("b", c): "1"} },
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.Put(ctx, lookupValue(k, "c", c, "1"), lookupKey(k))
		},
		after: func(c int) map[string]string {
			return map[string]string{lookupCtx("b", c): "1", lookupCtx("c", c): "1"}
		},
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			v := lookupValue(k, "b", c, "")
			return s.Remove(ctx, v.ProviderID, v.ContextID, lookupKey(k))
		},
		after: func(c int) map[string]string { return map[string]string{lookupCtx("c", c): "1"} },
	},
	{
		do: func(ctx context.Context, s store.Store, k, c int) error {
			return s.RemoveProvider(ctx, lookupValue(k, "", c, "").ProviderID)
		},
		after: func(int) map[string]string { return map[string]string{} },
	},
}

func lookupKey(k int) multihash.Multihash { return Multihash("lookups", k) }

func lookupCtx(name string, cycle int) string { return fmt.Sprintf("%s-%03d", name, cycle) }

func lookupValue(k int, name string, cycle int, md string) store.Value {
	return value(fmt.Sprint("lookups-", k), lookupCtx(name, cycle), md)
}

// lookupAnswer is the answer the store holds for key after its first n
// writes.
func lookupAnswer(n int) map[string]string {
	if n == 0 {
		return map[string]string{}
	}
	return lookupCycle[(n-1)%len(lookupCycle)].after((n - 1) / len(lookupCycle))
}

// testLookupsWhileWriting checks that a store never answers a lookup with
// what a finished write replaced, under concurrent writes of the same key
// and of many others: the test of a store that caches answers. Each key
// has one writer, which counts its finished writes; a reader that saw n0
// of them before its Get and n1 after must get the answer of one of the
// states n0..n1+1 (the writer counts a write once it returned), and never
// one older than a state it has already seen.
// A background writer meanwhile puts and removes many other keys, as
// ingestion does, so that every part of a cache sees writes.
func testLookupsWhileWriting(t *testing.T, s store.Store) {
	ctx := context.Background()
	const (
		keys    = 8
		cycles  = 8
		readers = 4
	)
	var done [keys]atomic.Int64
	stop := make(chan struct{})
	var wg, noise sync.WaitGroup
	noise.Go(func() {
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			mhs := Multihashes(fmt.Sprint("lookups-noise-", b), 500)
			v := value("lookups-noise", fmt.Sprint("noise-", b), "n")
			if err := s.Put(ctx, v, mhs...); err != nil {
				t.Errorf("noise Put: %v", err)
				return
			}
			if b%2 == 1 {
				if err := s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID); err != nil {
					t.Errorf("noise RemoveProviderContext: %v", err)
					return
				}
			}
		}
	})
	for k := range keys {
		wg.Go(func() {
			for n := 1; n <= cycles*len(lookupCycle); n++ {
				st := lookupCycle[(n-1)%len(lookupCycle)]
				if err := st.do(ctx, s, k, (n-1)/len(lookupCycle)); err != nil {
					t.Errorf("key %d, write %d: %v", k, n, err)
					return
				}
				done[k].Store(int64(n))
			}
		})
	}
	var reads atomic.Int64
	for r := range readers {
		wg.Go(func() {
			seen := make([]int64, keys) // the oldest state each key may show
			for i := r; ; i++ {
				k := i % keys
				n0 := done[k].Load()
				if n0 == cycles*int64(len(lookupCycle)) && allDone(done[:], cycles*len(lookupCycle)) {
					return
				}
				vals, err := s.Get(ctx, lookupKey(k))
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				n1 := done[k].Load()
				got := make(map[string]string, len(vals))
				for _, v := range vals {
					got[string(v.ContextID)] = string(v.Metadata)
				}
				reads.Add(1)
				// Write n1+1 may have landed and not been counted yet.
				hi := min(n1+1, cycles*int64(len(lookupCycle)))
				match := int64(-1)
				for n := max(n0, seen[k]); n <= hi; n++ {
					if maps.Equal(got, lookupAnswer(int(n))) {
						match = n
						break
					}
				}
				if match < 0 {
					t.Errorf("key %d: Get answered %v with %d to %d writes done (state %d seen), want one of the states %d to %d: an answer a finished write replaced",
						k, got, n0, n1, seen[k], max(n0, seen[k]), hi)
					return
				}
				// Empty answers repeat within a cycle: only a non-empty
				// one pins the state.
				if len(got) > 0 {
					seen[k] = match
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	noise.Wait()
	if reads.Load() == 0 {
		t.Fatal("no lookup ran")
	}
	for k := range keys {
		vals := mustGet(t, s, lookupKey(k))
		if len(vals) != 0 {
			t.Errorf("key %d: %s after its provider was removed, want none", k, fmtValues(vals))
		}
	}
}

func allDone(done []atomic.Int64, n int) bool {
	for i := range done {
		if done[i].Load() != int64(n) {
			return false
		}
	}
	return true
}
