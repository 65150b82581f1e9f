package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
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
	defer runIngester(t, ing)()
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

// sharedPos is a Positions store two walkers share, as two processes share
// one in a database: moves are compared with the position they start from.
type sharedPos struct {
	mu sync.Mutex
	s  ingest.WalkState
}

// posApplier applies into a recorder and keeps its position in a
// sharedPos.
type posApplier struct {
	*recorder
	pos *sharedPos
}

func (a posApplier) Position(context.Context) (ingest.WalkState, error) {
	a.pos.mu.Lock()
	defer a.pos.mu.Unlock()
	return a.pos.s, nil
}

func (a posApplier) Move(_ context.Context, from, to ingest.WalkState) error {
	a.pos.mu.Lock()
	defer a.pos.mu.Unlock()
	if a.pos.s != from {
		return ingest.ErrPositionMoved
	}
	a.pos.s = to
	return nil
}

// TestUnorderedStaleHead: a walker given a head older than the last head
// another walker set (sharing the position) walks nothing: the head a walk
// starts from is fetched after the position is read, never taken from the
// caller.
func TestUnorderedStaleHead(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 74, Ads: 20, MhsPerAd: 2})
	stale := chain.Head()
	pos := &sharedPos{}
	a := posApplier{&recorder{src: &counting{Syncer: chain.Source()}}, pos}
	wa, err := ingest.NewWalker(newDS(), chain.Publisher, ingest.WithWalkerUnordered())
	if err != nil {
		t.Fatal(err)
	}
	if err := wa.Walk(ctx, a.src, cid.Undef, a); err != nil {
		t.Fatal(err)
	}
	if err := chain.Extend(5); err != nil {
		t.Fatal(err)
	}
	if err := wa.Walk(ctx, a.src, cid.Undef, a); err != nil {
		t.Fatal(err)
	}
	b := posApplier{&recorder{src: &counting{Syncer: chain.Source()}}, pos}
	wb, err := ingest.NewWalker(newDS(), chain.Publisher, ingest.WithWalkerUnordered())
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.Walk(ctx, b.src, stale, b); err != nil {
		t.Fatal(err)
	}
	if len(a.ads) != 25 || len(b.ads) != 0 {
		t.Fatalf("walker a applied %d ads, b (given a stale head) %d; want 25 and 0", len(a.ads), len(b.ads))
	}
}

// TestUnorderedFinishesOrderedWalk: an ordered walk left half applied in
// the datastore (an earlier version's) is finished, in order, by an
// unordered walker on the same datastore, and no ad is applied twice.
func TestUnorderedFinishesOrderedWalk(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 75, Ads: 30, MhsPerAd: 2})
	src := &counting{Syncer: chain.Source()}
	rec := &recorder{src: src, failAt: chain.Ads[10]}
	ds := newDS()
	ordered, err := ingest.NewWalker(ds, chain.Publisher)
	if err != nil {
		t.Fatal(err)
	}
	if err := ordered.Walk(ctx, src, cid.Undef, rec); err == nil {
		t.Fatal("the ordered walk did not stall at ad 10")
	}
	if s, _ := ordered.State(ctx); s.Pending() != 20 {
		t.Fatalf("ordered walk state %+v, want 20 pending", s)
	}
	w, err := ingest.NewWalker(ds, chain.Publisher, ingest.WithWalkerUnordered())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Walk(ctx, src, cid.Undef, rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.ads, chain.Ads) {
		t.Fatalf("applied %d ads %v, want each once, oldest first", len(rec.ads), rec.ads)
	}
	if s, _ := w.State(ctx); s.Walking() || !s.LastHead.Equals(chain.Head()) {
		t.Fatalf("after the walk: %+v", s)
	}
}

// elsewhereApplier says the publisher is walked elsewhere for its first
// busy Position calls, then keeps its position in pos.
type elsewhereApplier struct {
	posApplier
	busy *atomic.Int64
}

func (a elsewhereApplier) Position(ctx context.Context) (ingest.WalkState, error) {
	if a.busy.Add(-1) >= 0 {
		return ingest.WalkState{}, fmt.Errorf("held by another: %w", ingest.ErrWalkedElsewhere)
	}
	return a.posApplier.Position(ctx)
}

// TestUnorderedWalkedElsewhere: while Positions says another process walks
// the publisher, the Ingester records no failure and asks again after one
// slot time, then walks it once it may.
func TestUnorderedWalkedElsewhere(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 76, Ads: 10, MhsPerAd: 2})
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	busy := &atomic.Int64{}
	busy.Store(2)
	rec := &recorder{src: &counting{Syncer: chain.Source()}}
	pos := &sharedPos{}
	ing := newIngester(t, nil, newDS(), srcs, ingest.WithUnordered(), ingest.WithSlot(50*time.Millisecond, 100),
		ingest.WithBackoff(time.Minute, time.Minute),
		ingest.WithApplier(func(peer.ID) ingest.Applier {
			return elsewhereApplier{posApplier{rec, pos}, busy}
		}))
	defer runIngester(t, ing)()
	if err := ing.Announce(chain.Publisher, testAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the walk after the other process's", func() bool {
		st, _ := ing.Status(chain.Publisher)
		return st.LastHead.Equals(chain.Head())
	})
	st, _ := ing.Status(chain.Publisher)
	if st.Failures != 0 || st.LastError != nil {
		t.Errorf("status %+v: a walk elsewhere counted as a failure", st)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ads) != chain.Len() {
		t.Errorf("%d ads applied, want %d", len(rec.ads), chain.Len())
	}
}
