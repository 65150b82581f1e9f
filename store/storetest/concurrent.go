package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/indexkit/indexkit/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

func testConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const writers, perWriter = 4, 300
	shared := Multihashes("conc-shared", 50)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Get(ctx, shared[(i+r)%len(shared)]); err != nil {
					t.Errorf("concurrent Get: %v", err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			p := fmt.Sprint("w", w)
			for i := range perWriter {
				v := value(p, fmt.Sprint("ctx", i%10), "md")
				if err := s.Put(ctx, v, Multihash("conc-"+p, i), shared[i%len(shared)]); err != nil {
					t.Errorf("concurrent Put: %v", err)
					return
				}
				if i%50 == 49 {
					if err := s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("md2")); err != nil {
						t.Errorf("concurrent UpdateMetadata: %v", err)
						return
					}
				}
			}
			// Drop one context per writer; the others stay.
			if err := s.RemoveProviderContext(ctx, PeerID(p), []byte("ctx0")); err != nil {
				t.Errorf("concurrent RemoveProviderContext: %v", err)
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		return
	}
	for w := range writers {
		p := fmt.Sprint("w", w)
		for i := range perWriter {
			vals := mustGet(t, s, Multihash("conc-"+p, i))
			if i%10 == 0 {
				if len(vals) != 0 {
					t.Fatalf("%s/%d: removed context still has %s", p, i, fmtValues(vals))
				}
				continue
			}
			if len(vals) != 1 || vals[0].ProviderID != PeerID(p) || string(vals[0].ContextID) != fmt.Sprint("ctx", i%10) {
				t.Fatalf("%s/%d: got %s", p, i, fmtValues(vals))
			}
		}
	}
	// Every shared multihash holds one value per (writer, context 1..9) that
	// wrote it.
	for j, mh := range shared {
		want := map[string]bool{}
		for w := range writers {
			for i := j; i < perWriter; i += len(shared) {
				if i%10 != 0 {
					want[fmt.Sprint("w", w, "/ctx", i%10)] = true
				}
			}
		}
		if vals := mustGet(t, s, mh); len(vals) != len(want) {
			t.Fatalf("shared %d: %d values, want %d", j, len(vals), len(want))
		}
	}
}

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	mh := Multihash("closed", 0)
	v := value("p1", "ctx1", "md1")
	mustPut(t, s, v, mh)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, getErr := s.Get(ctx, mh)
	_, provErr := s.Provider(ctx, v.ProviderID)
	_, sizeErr := s.Size(ctx)
	var allErr, provsErr error
	for _, err := range s.All(ctx) {
		allErr = err
		break
	}
	for _, err := range s.Providers(ctx) {
		provsErr = err
		break
	}
	for name, err := range map[string]error{
		"Put":                   s.Put(ctx, v, mh),
		"Get":                   getErr,
		"Remove":                s.Remove(ctx, v.ProviderID, v.ContextID, mh),
		"RemoveProviderContext": s.RemoveProviderContext(ctx, v.ProviderID, v.ContextID),
		"RemoveProvider":        s.RemoveProvider(ctx, v.ProviderID),
		"UpdateMetadata":        s.UpdateMetadata(ctx, v.ProviderID, v.ContextID, []byte("x")),
		"PutProvider":           s.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: v.ProviderID}}),
		"Provider":              provErr,
		"Providers":             provsErr,
		"DeleteProvider":        s.DeleteProvider(ctx, v.ProviderID),
		"All":                   allErr,
		"Size":                  sizeErr,
		"Flush":                 s.Flush(ctx),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if sw, ok := s.(store.Sweeper); ok {
		if _, err := sw.Sweep(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Sweep after Close: %v, want ErrClosed", err)
		}
	}
}
