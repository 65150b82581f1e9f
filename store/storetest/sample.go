package storetest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// sampler returns s as a store.Sampler, or skips the test.
func sampler(t *testing.T, s store.Store) store.Sampler {
	t.Helper()
	sp, ok := s.(store.Sampler)
	if !ok {
		t.Skipf("%T does not implement store.Sampler", s)
	}
	return sp
}

// Population returns the whole population of (provider, contextID) in sp,
// in ascending byte order: Sample with every position.
func Population(ctx context.Context, sp store.Sampler, provider peer.ID, contextID []byte) ([]multihash.Multihash, error) {
	return sp.Sample(ctx, provider, contextID, func(n int) []int {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	})
}

// mustPopulation returns the population of v's context, checking that it
// is in ascending byte order without repeats.
func mustPopulation(t *testing.T, sp store.Sampler, v store.Value) []multihash.Multihash {
	t.Helper()
	got, err := Population(context.Background(), sp, v.ProviderID, v.ContextID)
	if err != nil {
		t.Fatalf("Sample(%s): %v", v.ContextID, err)
	}
	for i := 1; i < len(got); i++ {
		if bytes.Compare(got[i-1], got[i]) >= 0 {
			t.Fatalf("Sample(%s) with every position: not in ascending byte order without repeats at %d", v.ContextID, i)
		}
	}
	return got
}

// sortedSet returns the distinct multihashes of mhs in ascending order:
// the population of a context that holds them.
func sortedSet(mhs ...[]multihash.Multihash) []multihash.Multihash {
	var out []multihash.Multihash
	for _, m := range mhs {
		out = append(out, m...)
	}
	out = slices.Clone(out)
	slices.SortFunc(out, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	return slices.CompactFunc(out, func(a, b multihash.Multihash) bool { return bytes.Equal(a, b) })
}

// without returns mhs less those in rm.
func without(mhs, rm []multihash.Multihash) []multihash.Multihash {
	return slices.DeleteFunc(slices.Clone(mhs), func(mh multihash.Multihash) bool {
		return slices.ContainsFunc(rm, func(x multihash.Multihash) bool { return bytes.Equal(x, mh) })
	})
}

func sameMultihashes(a, b []multihash.Multihash) bool {
	return slices.EqualFunc(a, b, func(x, y multihash.Multihash) bool { return bytes.Equal(x, y) })
}

// checkPopulation fails unless the population of v's context is exactly
// want (sorted) and Get finds v on its multihashes (some 200 of them,
// spread over it).
func checkPopulation(t *testing.T, s store.Store, sp store.Sampler, v store.Value, want []multihash.Multihash, what string) {
	t.Helper()
	got := mustPopulation(t, sp, v)
	if !sameMultihashes(got, want) {
		t.Fatalf("%s: the population of %s has %d multihashes, want the %d of the context in byte order", what, v.ContextID, len(got), len(want))
	}
	for i := 0; i < len(got); i += 1 + len(got)/200 {
		mh := got[i]
		if vals := mustGet(t, s, mh); !slices.ContainsFunc(vals, func(x store.Value) bool { return x.SameContext(v) }) {
			t.Fatalf("%s: the population of %s names %x, but Get does not find the context on it: %s", what, v.ContextID, []byte(mh), fmtValues(vals))
		}
	}
}

// testSample checks the store.Sampler contract: the population of a
// context is its set of multihashes in byte order whatever the order,
// batching and repeats of the Puts (so two stores holding the same
// context answer alike), pick sees the count once and gets the positions
// it asks for in its order, Remove takes multihashes out, removing the
// context drops its population.
func testSample(t *testing.T, s store.Store) {
	sp := sampler(t, s)
	ctx := context.Background()

	if _, err := sp.Sample(ctx, PeerID("p"), []byte("none"), func(int) []int { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample of an unknown context: %v, want ErrNotFound", err)
	}

	small := value("p", "small", "m")
	smallMHs := Multihashes("sample-small", 20)
	mustPut(t, s, small, smallMHs...)
	checkPopulation(t, s, sp, small, sortedSet(smallMHs), "a small context")

	// A Put that changes the metadata writes its first multihashes with
	// the record: they join the population too.
	more := Multihashes("sample-small-more", 5)
	small.Metadata = []byte("m-changed")
	mustPut(t, s, small, more...)
	checkPopulation(t, s, sp, small, sortedSet(smallMHs, more), "a Put that changed the metadata")

	// The same 5000 multihashes put into two contexts, one in order in
	// big Puts (larger than a disk backend's engine batch), the other
	// shuffled in small ones with repeats: one population.
	big := Multihashes("sample-big", 5000)
	a, b := value("p", "big-a", "m"), value("p", "big-b", "m")
	for i := 0; i < len(big); i += 2500 {
		mustPut(t, s, a, big[i:i+2500]...)
	}
	shuffled := slices.Clone(big)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i := 0; i < len(shuffled); i += 37 {
		batch := shuffled[i:min(i+37, len(shuffled))]
		mustPut(t, s, b, append(slices.Clone(batch), batch[0], shuffled[r.IntN(i+1)])...)
	}
	want := sortedSet(big)
	checkPopulation(t, s, sp, a, want, "5000 multihashes in order")
	checkPopulation(t, s, sp, b, want, "the same 5000 shuffled, in small Puts with repeats")

	// pick is called once with the count; the positions come back in its
	// order.
	calls := 0
	got, err := sp.Sample(ctx, b.ProviderID, b.ContextID, func(n int) []int {
		calls++
		if n != len(want) {
			t.Errorf("pick(%d), want pick(%d)", n, len(want))
		}
		return []int{n - 1, 0, 4095, 4096, 7}
	})
	if err != nil || calls != 1 || !sameMultihashes(got, []multihash.Multihash{want[4999], want[0], want[4095], want[4096], want[7]}) {
		t.Fatalf("Sample at positions 4999, 0, 4095, 4096, 7: %d multihashes, %v, pick called %d times", len(got), err, calls)
	}
	if got, err := sp.Sample(ctx, b.ProviderID, b.ContextID, func(int) []int { return nil }); err != nil || len(got) != 0 {
		t.Fatalf("Sample at no position: %v, %v", got, err)
	}
	for _, bad := range []int{-1, len(want)} {
		if _, err := sp.Sample(ctx, b.ProviderID, b.ContextID, func(int) []int { return []int{0, bad} }); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Sample at position %d of %d: %v, want an error naming the position", bad, len(want), err)
		}
	}

	// A re-Put and a metadata update change nothing.
	mustPut(t, s, a, big[:1000]...)
	if err := s.UpdateMetadata(ctx, a.ProviderID, a.ContextID, []byte("m2")); err != nil {
		t.Fatal(err)
	}
	a.Metadata = []byte("m2")
	checkPopulation(t, s, sp, a, want, "after a re-Put and a metadata update")

	// Remove takes multihashes out (and ignores those not there); one
	// removed and put again comes back.
	rm := append(slices.Clone(big[10:4600:4600]), Multihash("never-put", 0))
	if err := s.Remove(ctx, a.ProviderID, a.ContextID, rm...); err != nil {
		t.Fatal(err)
	}
	left := without(want, rm)
	checkPopulation(t, s, sp, a, left, "after Remove")
	mustPut(t, s, a, big[20])
	checkPopulation(t, s, sp, a, sortedSet(left, big[20:21]), "a removed multihash put again")
	checkPopulation(t, s, sp, b, want, "another context of the removed multihashes")

	// Removing the context drops its population; putting it again starts
	// anew.
	if err := s.RemoveProviderContext(ctx, b.ProviderID, b.ContextID); err != nil {
		t.Fatal(err)
	}
	if _, err := Population(ctx, sp, b.ProviderID, b.ContextID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample of a removed context: %v, want ErrNotFound", err)
	}
	fresh := Multihashes("sample-fresh", 3)
	mustPut(t, s, b, fresh...)
	checkPopulation(t, s, sp, b, sortedSet(fresh), "a context put again after removal")
	if sw, ok := s.(store.Sweeper); ok {
		if _, err := sw.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		checkPopulation(t, s, sp, b, sortedSet(fresh), "after Sweep")
		checkPopulation(t, s, sp, a, sortedSet(left, big[20:21]), "after Sweep")
	}
	if err := s.RemoveProvider(ctx, small.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := Population(ctx, sp, small.ProviderID, small.ContextID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample after RemoveProvider: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Population(ctx, sp, a.ProviderID, a.ContextID); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Sample after Close: %v, want ErrClosed", err)
	}
}

// testSampleReopen checks that a population survives Close and
// reopening, and that the rest of the context put after it lands in it.
func testSampleReopen(t *testing.T, open func(string) (store.Store, error)) {
	dir := t.TempDir()
	s, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sp := sampler(t, s)
	v := value("p", "reopen-sample", "m")
	mhs := Multihashes("sample-reopen", 1000)
	mustPut(t, s, v, mhs[:600]...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = open(dir); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	sp = sampler(t, s)
	checkPopulation(t, s, sp, v, sortedSet(mhs[:600]), "after Close and reopen")
	mustPut(t, s, v, mhs[600:]...)
	checkPopulation(t, s, sp, v, sortedSet(mhs), "completed after reopening")
}
