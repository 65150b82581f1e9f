package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

// README: conformance
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

// README end

func newStore(t *testing.T) *memory.Store {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return s
}

func mhs(seed string, n int) []multihash.Multihash {
	out := make([]multihash.Multihash, n)
	for i := range out {
		mh, err := multihash.Sum(fmt.Appendf(nil, "%s-%d", seed, i), multihash.SHA2_256, -1)
		if err != nil {
			panic(err)
		}
		out[i] = mh
	}
	return out
}

func val(p, c, md string) store.Value {
	return store.Value{ProviderID: peer.ID(p), ContextID: []byte(c), Metadata: []byte(md)}
}

func get(t *testing.T, s *memory.Store, mh multihash.Multihash) []store.Value {
	t.Helper()
	vs, err := s.Get(context.Background(), mh)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return vs
}

func expect(t *testing.T, s *memory.Store, mh multihash.Multihash, want ...store.Value) {
	t.Helper()
	got := get(t, s, mh)
	if len(got) != len(want) {
		t.Fatalf("get %x: got %d values %v, want %v", mh, len(got), got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g.Equal(w)
		}
		if !found {
			t.Fatalf("get %x: got %v, want %v", mh, got, want)
		}
	}
}

func put(t *testing.T, s *memory.Store, v store.Value, mhs ...multihash.Multihash) {
	t.Helper()
	if err := s.Put(context.Background(), v, mhs...); err != nil {
		t.Fatalf("put: %v", err)
	}
}

func TestPutGetDedupe(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("a", 10)
	a, b := val("p1", "c1", "m1"), val("p2", "c1", "m2")
	if vs := get(t, s, ms[0]); vs != nil {
		t.Fatalf("empty store: got %v", vs)
	}
	put(t, s, a, ms...)
	put(t, s, a, ms...) // no-op
	put(t, s, a, ms[0], ms[0])
	put(t, s, b, ms[:3]...)
	put(t, s, b, ms[:3]...)
	for i, mh := range ms {
		if i < 3 {
			expect(t, s, mh, a, b)
		} else {
			expect(t, s, mh, a)
		}
	}
	// A third value on a multihash that already has two, then removal
	// back down to one and to none.
	c := val("p3", "c", "m3")
	put(t, s, c, ms[0])
	expect(t, s, ms[0], a, b, c)
	if err := s.Remove(ctx, "p2", []byte("c1"), ms[0]); err != nil {
		t.Fatal(err)
	}
	expect(t, s, ms[0], a, c)
	if err := s.Remove(ctx, "p1", []byte("c1"), ms[0]); err != nil {
		t.Fatal(err)
	}
	expect(t, s, ms[0], c)
	if err := s.Remove(ctx, "p3", []byte("c"), ms[0]); err != nil {
		t.Fatal(err)
	}
	expect(t, s, ms[0])

	// The store keeps its own copy of the value.
	v := val("p4", "c4", "m4")
	put(t, s, v, ms[9])
	v.ContextID[0], v.Metadata[0] = 'X', 'X'
	expect(t, s, ms[9], a, val("p4", "c4", "m4"))

	// The same digest under another slice is the same entry.
	put(t, s, a, bytes.Clone(ms[5]))
	expect(t, s, ms[5], a)
}

func TestMetadataUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("m", 50)
	put(t, s, val("p", "c", "old"), ms...)
	put(t, s, val("p", "other", "x"), ms[0])

	// Put with new metadata changes every multihash of the context.
	put(t, s, val("p", "c", "new"), ms[7])
	for _, mh := range ms[1:] {
		expect(t, s, mh, val("p", "c", "new"))
	}
	expect(t, s, ms[0], val("p", "c", "new"), val("p", "other", "x"))

	if err := s.UpdateMetadata(ctx, "p", []byte("c"), []byte("newer")); err != nil {
		t.Fatal(err)
	}
	for _, mh := range ms[1:] {
		expect(t, s, mh, val("p", "c", "newer"))
	}
	// Empty metadata is allowed.
	if err := s.UpdateMetadata(ctx, "p", []byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	expect(t, s, ms[3], val("p", "c", ""))

	err := s.UpdateMetadata(ctx, "p", []byte("missing"), []byte("x"))
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update unknown context: %v, want ErrNotFound", err)
	}
	if err := s.UpdateMetadata(ctx, "p", nil, []byte("x")); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("update empty context: %v, want ErrInvalidValue", err)
	}
	// A Put with no multihashes still creates the record.
	put(t, s, val("q", "c", "1"))
	if err := s.UpdateMetadata(ctx, "q", []byte("c"), []byte("2")); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveExact(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("r", 10)
	a, b := val("p", "a", "1"), val("p", "b", "2")
	put(t, s, a, ms...)
	put(t, s, b, ms...)
	if err := s.Remove(ctx, "p", []byte("a"), ms[:5]...); err != nil {
		t.Fatal(err)
	}
	for i, mh := range ms {
		if i < 5 {
			expect(t, s, mh, b)
		} else {
			expect(t, s, mh, a, b)
		}
	}
	// Removing what is not there is a no-op.
	if err := s.Remove(ctx, "p", []byte("a"), ms[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "nobody", []byte("a"), ms...); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "p", []byte("a"), mhs("other", 3)...); err != nil {
		t.Fatal(err)
	}
	expect(t, s, ms[9], a, b)
	// Removal needs no sweep.
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep: %d, %v; want 0", n, err)
	}
}

func TestRemoveContextNoResurrection(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	old, fresh := mhs("old", 20), mhs("fresh", 5)
	v := val("p", "c", "m")
	other := val("p2", "c", "m")
	put(t, s, v, old...)
	put(t, s, other, old[0])
	if err := s.RemoveProviderContext(ctx, "p", []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProviderContext(ctx, "p", []byte("c")); err != nil {
		t.Fatalf("second removal: %v", err)
	}
	for _, mh := range old[1:] {
		if vs := get(t, s, mh); len(vs) != 0 {
			t.Fatalf("removed context still there: %v", vs)
		}
	}
	expect(t, s, old[0], other)
	if err := s.UpdateMetadata(ctx, "p", []byte("c"), []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update removed context: %v, want ErrNotFound", err)
	}

	// Putting the context again brings back only what is put.
	put(t, s, v, fresh...)
	for _, mh := range old[1:] {
		if vs := get(t, s, mh); len(vs) != 0 {
			t.Fatalf("old multihash resurrected: %v", vs)
		}
	}
	for _, mh := range fresh {
		expect(t, s, mh, v)
	}
	put(t, s, v, old[3])
	expect(t, s, old[3], v)
	expect(t, s, old[0], other)

	// All does not yield the dangling entries.
	n := 0
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Values) == 0 {
			t.Fatalf("All yielded %x with no values", e.Multihash)
		}
		n++
	}
	if want := len(fresh) + 2; n != want {
		t.Fatalf("All yielded %d entries, want %d", n, want)
	}
}

func TestRemoveProvider(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("rp", 10)
	put(t, s, val("p", "a", "1"), ms[:5]...)
	put(t, s, val("p", "b", "2"), ms[5:]...)
	put(t, s, val("q", "a", "3"), ms...)
	if err := s.RemoveProvider(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	for _, mh := range ms {
		expect(t, s, mh, val("q", "a", "3"))
	}
	if err := s.RemoveProvider(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx)
	if err != nil || n != 10 {
		t.Fatalf("sweep: %d, %v; want 10", n, err)
	}
}

func TestSweepCounts(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of empty store: %d, %v", n, err)
	}
	ms := mhs("s", 1000)
	a, b, c := val("p", "a", "1"), val("p", "b", "2"), val("p", "c", "3")
	put(t, s, a, ms...)
	put(t, s, b, ms[:100]...)
	put(t, s, c, ms[:10]...)
	size0, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProviderContext(ctx, "p", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProviderContext(ctx, "p", []byte("c")); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ctx)
	if err != nil || n != 1010 {
		t.Fatalf("sweep: %d, %v; want 1010", n, err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: %d, %v; want 0", n, err)
	}
	for i, mh := range ms {
		if i < 100 {
			expect(t, s, mh, b)
		} else {
			expect(t, s, mh)
		}
	}
	size1, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if size1 >= size0 {
		t.Fatalf("size did not shrink after sweep: %d -> %d", size0, size1)
	}
	// Entries are re-added after a sweep under the new record only.
	put(t, s, a, ms[500])
	expect(t, s, ms[500], a)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Sweep(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("sweep with cancelled context: %v", err)
	}
}

func TestSize(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	size := func() int64 {
		t.Helper()
		n, err := s.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := size(); n != 0 {
		t.Fatalf("empty store size %d", n)
	}
	ms := mhs("z", 1000)
	put(t, s, val("p", "c", "m"), ms...)
	n1 := size()
	if n1 < 1000*34 {
		t.Fatalf("size %d below the key bytes", n1)
	}
	put(t, s, val("p", "c2", "m"), ms...)
	n2 := size()
	if n2 <= n1 {
		t.Fatalf("size did not grow with a second value: %d -> %d", n1, n2)
	}
	if err := s.Remove(ctx, "p", []byte("c2"), ms...); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "p", []byte("c"), ms...); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveProvider(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if n := size(); n != 0 {
		t.Fatalf("size %d after removing everything", n)
	}
}

func TestRejectedCallChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("bad", 3)
	bad := append(multihash.Multihash(nil), ms[1][:10]...)
	err := s.Put(ctx, val("p", "c", "m"), ms[0], bad, ms[2])
	if !errors.Is(err, store.ErrInvalidMultihash) {
		t.Fatalf("put bad multihash: %v", err)
	}
	if err.Error()[:len("memory: put: ")] != "memory: put: " {
		t.Fatalf("error %q does not name the operation", err)
	}
	expect(t, s, ms[0])
	if err := s.UpdateMetadata(ctx, "p", []byte("c"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rejected put created the record: %v", err)
	}
	if err := s.Put(ctx, val("", "c", "m"), ms[0]); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("put empty provider: %v", err)
	}
	if err := s.Put(ctx, val("p", "", "m"), ms[0]); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("put empty context: %v", err)
	}
	if err := s.Put(ctx, val("p", "c", string(make([]byte, store.MaxMetadataLen+1))), ms[0]); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("put oversize metadata: %v", err)
	}
	if _, err := s.Get(ctx, bad); !errors.Is(err, store.ErrInvalidMultihash) {
		t.Fatalf("get bad multihash: %v", err)
	}
	put(t, s, val("p", "c", "m"), ms...)
	if err := s.Remove(ctx, "p", []byte("c"), ms[0], bad); !errors.Is(err, store.ErrInvalidMultihash) {
		t.Fatalf("remove bad multihash: %v", err)
	}
	expect(t, s, ms[0], val("p", "c", "m"))
	if err := s.UpdateMetadata(ctx, "p", []byte("c"), make([]byte, store.MaxMetadataLen+1)); !errors.Is(err, store.ErrInvalidValue) {
		t.Fatalf("update oversize metadata: %v", err)
	}
	expect(t, s, ms[0], val("p", "c", "m"))
}
