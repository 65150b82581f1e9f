package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

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

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ms := mhs("closed", 2)
	put(t, s, val("p", "c", "m"), ms...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	v := val("p", "c", "m")
	errs := map[string]error{
		"put":    s.Put(ctx, v, ms...),
		"remove": s.Remove(ctx, "p", []byte("c"), ms...),
		"rpc":    s.RemoveProviderContext(ctx, "p", []byte("c")),
		"rp":     s.RemoveProvider(ctx, "p"),
		"update": s.UpdateMetadata(ctx, "p", []byte("c"), nil),
		"pp":     s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: storetest.PeerID("p")}}),
		"dp":     s.DeleteProvider(ctx, storetest.PeerID("p")),
		"flush":  s.Flush(ctx),
	}
	_, errs["get"] = s.Get(ctx, ms[0])
	_, errs["provider"] = s.Provider(ctx, storetest.PeerID("p"))
	_, errs["size"] = s.Size(ctx)
	_, errs["sweep"] = s.Sweep(ctx)
	for _, err := range s.All(ctx) {
		errs["all"] = err
	}
	for _, err := range s.Providers(ctx) {
		errs["providers"] = err
	}
	for name, err := range errs {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

func TestAllMayCallStore(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	ms := mhs("all", 3000)
	v := val("p", "c", "m")
	put(t, s, v, ms...)
	seen := map[string]bool{}
	for e, err := range s.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(e.Multihash)] {
			t.Fatalf("%x yielded twice", e.Multihash)
		}
		seen[string(e.Multihash)] = true
		if len(e.Values) != 1 || !e.Values[0].Equal(v) {
			t.Fatalf("values %v", e.Values)
		}
		// Calls from the loop body must not deadlock.
		if err := s.Remove(ctx, "p", []byte("c"), e.Multihash); err != nil {
			t.Fatal(err)
		}
		put(t, s, val("q", "c", "m"), e.Multihash)
	}
	if len(seen) != len(ms) {
		t.Fatalf("All yielded %d, want %d", len(seen), len(ms))
	}
	// Close from inside the loop ends it with ErrClosed.
	var last error
	for _, err := range s.All(ctx) {
		if err != nil {
			last = err
			break
		}
		s.Close()
	}
	if !errors.Is(last, store.ErrClosed) {
		t.Fatalf("All after Close in the loop: %v", last)
	}
}

func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const writers, per = 4, 2000
	var wg sync.WaitGroup
	for w := range writers {
		ms := mhs(fmt.Sprint("w", w), per)
		shared := mhs("shared", 100)
		wg.Go(func() {
			v := val(fmt.Sprint("p", w), "c", "m")
			for i := 0; i < per; i += 100 {
				if err := s.Put(ctx, v, ms[i:i+100]...); err != nil {
					t.Error(err)
					return
				}
				if err := s.Put(ctx, v, shared...); err != nil {
					t.Error(err)
					return
				}
				if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, fmt.Appendf(nil, "m%d", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range per {
				vs, err := s.Get(ctx, ms[i])
				if err != nil {
					t.Error(err)
					return
				}
				for _, v := range vs {
					if len(v.Metadata) == 0 {
						t.Error("empty metadata")
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := s.Sweep(ctx); err != nil {
				t.Error(err)
			}
			if _, err := s.Size(ctx); err != nil {
				t.Error(err)
			}
			for _, err := range s.All(ctx) {
				if err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Go(func() {
		for i := range 50 {
			p := peer.ID(fmt.Sprint("tmp", i))
			_ = s.Put(ctx, val(string(p), "c", "m"), mhs("shared", 100)...)
			_ = s.RemoveProvider(ctx, p)
			_ = s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: p}})
		}
	})
	wg.Wait()
	for w := range writers {
		ms := mhs(fmt.Sprint("w", w), per)
		for _, mh := range ms {
			expect(t, s, mh, val(fmt.Sprint("p", w), "c", fmt.Sprint("m", per-100)))
		}
	}
	if len(get(t, s, mhs("shared", 1)[0])) != writers {
		t.Fatal("shared multihash lost values")
	}
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if len(get(t, s, mhs("shared", 1)[0])) != writers {
		t.Fatal("sweep removed live values")
	}
}

func TestCloseWaitsAndIsSafeConcurrently(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ms := mhs("cc", 500)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 200 {
				err := s.Put(ctx, val("p", "c", "m"), ms[i:i+100]...)
				if err != nil && !errors.Is(err, store.ErrClosed) {
					t.Error(err)
				}
				_, err = s.Get(ctx, ms[i])
				if err != nil && !errors.Is(err, store.ErrClosed) {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() { s.Close() })
	wg.Go(func() { s.Close() })
	wg.Wait()
}
