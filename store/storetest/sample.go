package storetest

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indexkit/indexkit/store"
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

func mustSample(t *testing.T, sp store.Sampler, v store.Value) []multihash.Multihash {
	t.Helper()
	got, err := sp.Sample(context.Background(), v.ProviderID, v.ContextID)
	if err != nil {
		t.Fatalf("Sample(%s): %v", v.ContextID, err)
	}
	if !slices.IsSortedFunc(got, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) }) {
		t.Fatalf("Sample(%s) is not in ascending byte order", v.ContextID)
	}
	return got
}

func sameMultihashes(a, b []multihash.Multihash) bool {
	return slices.EqualFunc(a, b, func(x, y multihash.Multihash) bool { return bytes.Equal(x, y) })
}

// checkSampleIn fails unless every member of got is among in and Get finds
// v on it.
func checkSampleIn(t *testing.T, s store.Store, v store.Value, got, in []multihash.Multihash) {
	t.Helper()
	set := make(map[string]bool, len(in))
	for _, mh := range in {
		set[string(mh)] = true
	}
	for _, mh := range got {
		if !set[string(mh)] {
			t.Fatalf("Sample(%s) names %x, which was never put in that context (or was removed)", v.ContextID, []byte(mh))
		}
		vals := mustGet(t, s, mh)
		if !slices.ContainsFunc(vals, func(x store.Value) bool { return x.SameContext(v) }) {
			t.Fatalf("Sample(%s) names %x, but Get does not find the context on it: %s", v.ContextID, []byte(mh), fmtValues(vals))
		}
	}
}

// testSample checks the store.Sampler contract: small contexts are sampled
// whole, large ones keep exactly SampleKeep, the sample does not depend on
// the order or batching of the Puts, re-Puts change nothing, Remove takes
// members out without refilling, removing the context drops the sample.
func testSample(t *testing.T, s store.Store) {
	sp := sampler(t, s)
	ctx := context.Background()

	if _, err := sp.Sample(ctx, PeerID("p"), []byte("none")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample of an unknown context: %v, want ErrNotFound", err)
	}

	small := value("p", "small", "m")
	smallMHs := Multihashes("sample-small", store.SampleKeep/2)
	mustPut(t, s, small, smallMHs...)
	got := mustSample(t, sp, small)
	want := slices.Clone(smallMHs)
	slices.SortFunc(want, func(a, b multihash.Multihash) int { return bytes.Compare(a, b) })
	if !sameMultihashes(got, want) {
		t.Fatalf("a context of %d multihashes: Sample has %d, want all of them", len(smallMHs), len(got))
	}

	// A Put that changes the metadata writes its first multihashes with
	// the record: they enter the sample too.
	more := Multihashes("sample-small-more", 5)
	small.Metadata = []byte("m-changed")
	mustPut(t, s, small, more...)
	if got := mustSample(t, sp, small); len(got) != len(smallMHs)+len(more) {
		t.Fatalf("a Put that changed the metadata: Sample has %d multihashes, want %d", len(got), len(smallMHs)+len(more))
	} else {
		checkSampleIn(t, s, small, got, append(slices.Clone(smallMHs), more...))
	}

	// The same 2000 multihashes put into two contexts, one in order in big
	// Puts, the other shuffled in small ones, each with a re-Put.
	big := Multihashes("sample-big", 2000)
	a, b := value("p", "big-a", "m"), value("p", "big-b", "m")
	for i := 0; i < len(big); i += 500 {
		mustPut(t, s, a, big[i:i+500]...)
	}
	shuffled := slices.Clone(big)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i := 0; i < len(shuffled); i += 37 {
		mustPut(t, s, b, shuffled[i:min(i+37, len(shuffled))]...)
	}
	sa := mustSample(t, sp, a)
	if len(sa) != store.SampleKeep {
		t.Fatalf("a context of %d multihashes: Sample has %d, want SampleKeep (%d)", len(big), len(sa), store.SampleKeep)
	}
	checkSampleIn(t, s, a, sa, big)
	if sb := mustSample(t, sp, b); !sameMultihashes(sa, sb) {
		t.Fatalf("the same multihashes put in another order and batching give another sample:\n%x\n%x", sa[:3], sb[:3])
	}
	mustPut(t, s, a, big[:1000]...)
	if err := s.UpdateMetadata(ctx, a.ProviderID, a.ContextID, []byte("m2")); err != nil {
		t.Fatal(err)
	}
	a.Metadata = []byte("m2")
	if again := mustSample(t, sp, a); !sameMultihashes(sa, again) {
		t.Fatal("a re-Put or a metadata update changed the sample")
	}

	// Remove half the sample and some other multihashes: those members go,
	// the rest stay, and nothing replaces them.
	var rm []multihash.Multihash
	for i, mh := range sa {
		if i%2 == 0 {
			rm = append(rm, mh)
		}
	}
	rm = append(rm, big[:10]...)
	if err := s.Remove(ctx, a.ProviderID, a.ContextID, rm...); err != nil {
		t.Fatal(err)
	}
	left := mustSample(t, sp, a)
	var wantLeft []multihash.Multihash
	for i, mh := range sa {
		if i%2 == 1 && !slices.ContainsFunc(big[:10], func(x multihash.Multihash) bool { return bytes.Equal(x, mh) }) {
			wantLeft = append(wantLeft, mh)
		}
	}
	if !sameMultihashes(left, wantLeft) {
		t.Fatalf("after Remove: Sample has %d multihashes, want the %d members not removed", len(left), len(wantLeft))
	}
	// A re-Put of the members left and of multihashes never in the sample
	// changes nothing; a removed member put again comes back.
	var outside []multihash.Multihash
	for _, mh := range big {
		if !slices.ContainsFunc(sa, func(x multihash.Multihash) bool { return bytes.Equal(x, mh) }) {
			outside = append(outside, mh)
		}
	}
	mustPut(t, s, a, append(slices.Clone(left), outside...)...)
	if again := mustSample(t, sp, a); !sameMultihashes(left, again) {
		t.Fatal("a re-Put after Remove changed the sample")
	}
	mustPut(t, s, a, rm[0])
	if again := mustSample(t, sp, a); len(again) != len(left)+1 {
		t.Fatalf("a removed member put again: Sample has %d multihashes, want %d", len(again), len(left)+1)
	}

	// Removing the context drops its sample; putting it again starts anew.
	if err := s.RemoveProviderContext(ctx, b.ProviderID, b.ContextID); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Sample(ctx, b.ProviderID, b.ContextID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample of a removed context: %v, want ErrNotFound", err)
	}
	fresh := Multihashes("sample-fresh", 3)
	mustPut(t, s, b, fresh...)
	if got := mustSample(t, sp, b); len(got) != 3 {
		t.Fatalf("a context put again after removal: Sample has %d multihashes, want its 3 new ones", len(got))
	} else {
		checkSampleIn(t, s, b, got, fresh)
	}
	if err := s.RemoveProvider(ctx, small.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Sample(ctx, small.ProviderID, small.ContextID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Sample after RemoveProvider: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Sample(ctx, a.ProviderID, a.ContextID); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Sample after Close: %v, want ErrClosed", err)
	}
}

// testSampleReopen checks that a sample survives Close and reopening, and
// that the reopened store keeps it bounded the same way.
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
	before := mustSample(t, sp, v)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = open(dir); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	sp = sampler(t, s)
	if after := mustSample(t, sp, v); !sameMultihashes(before, after) {
		t.Fatal("the sample changed across Close and reopen")
	}
	// The rest of the context, put after reopening, lands in the same
	// sample as if it had all been put before: check against a fresh
	// context of the same store holding all of it.
	mustPut(t, s, v, mhs[600:]...)
	whole := value("p", "reopen-whole", "m")
	mustPut(t, s, whole, mhs...)
	got := mustSample(t, sp, v)
	if !sameMultihashes(got, mustSample(t, sp, whole)) {
		t.Fatal("after reopening, the sample key or thresholds changed: a context completed after reopening differs from one put whole")
	}
	checkSampleIn(t, s, v, got, mhs)
}
