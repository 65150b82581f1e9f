package ingest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/internal/chaingen"
)

// recorder is an Applier that records the ads it is given and how many
// blocks its source had served when it got each; failAt makes Apply of
// that CID fail once.
type recorder struct {
	mu      sync.Mutex
	src     *counting
	ads     []cid.Cid
	fetched []int64
	failAt  cid.Cid
}

func (r *recorder) Apply(_ context.Context, _ ingest.Syncer, ad ingest.Ad) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ad.Cid.Equals(r.failAt) {
		r.failAt = cid.Undef
		return errors.New("transient")
	}
	r.ads = append(r.ads, ad.Cid)
	r.fetched = append(r.fetched, r.src.n.Load())
	return nil
}

func (r *recorder) Flush(context.Context) error { return nil }

// TestUnorderedWalk walks a chain with a Walker in unordered mode: every
// ad is applied as it is fetched, newest first (the first one after one
// block request); an Apply that fails stalls the walk at its ad, and the
// next Walk resumes there, applying no other ad twice; a new head is
// walked down to the last head only.
func TestUnorderedWalk(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 71, Ads: 30, MhsPerAd: 3})
	src := &counting{Syncer: chain.Source()}
	rec := &recorder{src: src, failAt: chain.Ads[12]}
	ds := newDS()
	w, err := ingest.NewWalker(ds, chain.Publisher, ingest.WithWalkerUnordered())
	if err != nil {
		t.Fatal(err)
	}
	err = w.Walk(ctx, src, cid.Undef, rec)
	var ae *ingest.AdError
	if !errors.As(err, &ae) || !ae.Ad.Equals(chain.Ads[12]) {
		t.Fatalf("first walk: %v, want the AdError of ad 12", err)
	}
	if rec.fetched[0] != 1 {
		t.Errorf("the head ad was applied after %d block requests, want 1", rec.fetched[0])
	}
	s, _ := w.State(ctx)
	if !s.Tail.Equals(chain.Ads[12]) || !s.Head.Equals(chain.Head()) || s.Collected != 17 {
		t.Fatalf("stalled state %+v, want tail at ad 12 after 17 ads", s)
	}
	// A new Walker on the same datastore (a restart) resumes at ad 12.
	w, err = ingest.NewWalker(ds, chain.Publisher, ingest.WithWalkerUnordered())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(ctx, src, cid.Undef, rec); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(chain.Ads)
	slices.Reverse(want)
	if !slices.Equal(rec.ads, want) {
		t.Fatalf("applied %d ads %v, want every ad once, newest first", len(rec.ads), rec.ads)
	}
	if s, _ := w.State(ctx); s.Walking() || !s.LastHead.Equals(chain.Head()) {
		t.Fatalf("after the walk: %+v", s)
	}

	if err := chain.Extend(4); err != nil {
		t.Fatal(err)
	}
	rec.ads = nil
	if err := w.Walk(ctx, src, cid.Undef, rec); err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(chain.Ads[30:])
	slices.Reverse(want)
	if !slices.Equal(rec.ads, want) {
		t.Fatalf("second walk applied %v, want the 4 new ads newest first", rec.ads)
	}
}

// TestUnorderedIngesterSlots runs an Ingester in unordered mode with a
// slot of 3 ads over a chain whose blocks come slowly: the applier sees
// the newest ads while the walk is far from the chain's start, and every
// ad is applied exactly once in the end.
func TestUnorderedIngesterSlots(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 72, Ads: 40, MhsPerAd: 2})
	slow := &counting{Syncer: chain.Source(), at: func(int64) { time.Sleep(2 * time.Millisecond) }}
	srcs := newSources()
	srcs.set(chain.Publisher, slow)
	var mu sync.Mutex
	applied := make(map[cid.Cid]int)
	ing := newIngester(t, nil, newDS(), srcs,
		ingest.WithUnordered(), ingest.WithSlot(time.Minute, 3),
		ingest.WithApplier(func(peer.ID) ingest.Applier {
			return applierFunc(func(_ context.Context, _ ingest.Syncer, ad ingest.Ad) error {
				mu.Lock()
				applied[ad.Cid]++
				mu.Unlock()
				return nil
			})
		}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := ing.Announce(chain.Publisher, testAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	var firstAt int64
	waitFor(t, "the head ad applied", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if applied[chain.Head()] > 0 {
			firstAt = slow.n.Load()
			return true
		}
		return false
	})
	if firstAt > 10 {
		t.Errorf("the head ad was applied after %d block requests of a 40-ad chain", firstAt)
	}
	waitFor(t, "every ad applied", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(applied) == chain.Len()
	})
	waitFor(t, "the walk done", func() bool {
		st, _ := ing.Status(chain.Publisher)
		return !st.Walking && st.LastHead.Equals(chain.Head())
	})
	mu.Lock()
	defer mu.Unlock()
	for c, n := range applied {
		if n != 1 {
			t.Errorf("ad %s applied %d times", c, n)
		}
	}
}

// TestUnorderedNeedsApplier: a store needs ordered walks.
func TestUnorderedNeedsApplier(t *testing.T) {
	_, err := ingest.New(nil, newDS(), newSources().syncer, ingest.WithUnordered())
	if !errors.Is(err, ingest.ErrInvalidOption) {
		t.Fatalf("New(WithUnordered) without an applier: %v, want ErrInvalidOption", err)
	}
}

// TestFirstEntries reads the first chunk of a three-chunk entry chain and
// fetches no other.
func TestFirstEntries(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 73, Ads: 1, MhsPerAd: 9, ChunkSize: 3})
	ing := newIngester(t, nil, newDS(), newSources(), ingest.WithApplier(func(peer.ID) ingest.Applier { return nil }))
	x, err := chain.Ad(0)
	if err != nil {
		t.Fatal(err)
	}
	ad := ingest.Ad{Cid: chain.Ads[0], Ad: x}
	for _, tc := range []struct{ blocks, mhs, fetched int }{{1, 3, 1}, {2, 6, 2}, {0, 9, 3}, {5, 9, 3}} {
		src := &counting{Syncer: chain.Source()}
		n := 0
		err := ing.FirstEntries(ctx, src, ad, tc.blocks, func(multihash.Multihash) error { n++; return nil })
		if err != nil || n != tc.mhs || src.n.Load() != int64(tc.fetched) {
			t.Errorf("FirstEntries(%d): %d multihashes after %d blocks (%v), want %d after %d", tc.blocks, n, src.n.Load(), err, tc.mhs, tc.fetched)
		}
	}
}

// applierFunc is an Applier of one function; Flush does nothing.
type applierFunc func(ctx context.Context, src ingest.Syncer, ad ingest.Ad) error

func (f applierFunc) Apply(ctx context.Context, src ingest.Syncer, ad ingest.Ad) error {
	return f(ctx, src, ad)
}
func (applierFunc) Flush(context.Context) error { return nil }
