package ingest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store/memory"
)

// TestCountersAfterPositionMoves: after each walk the publisher's Status
// and its provider record say exactly what the walk did: a walk to the
// head already applied counts nothing; a walk that stalls on an
// advertisement counts those applied before it; the walk that resumes it
// applies (and counts) only the rest; a walk after the chain grew counts
// the new advertisements only.
func TestCountersAfterPositionMoves(t *testing.T) {
	ctx := context.Background()
	const ads, mhs = 9, 5
	chain := generate(t, chaingen.Config{Seed: 904, Ads: ads, MhsPerAd: mhs, ChunkSize: mhs})
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	st := memory.New()
	defer st.Close()
	// Checkpoints every 3 ads: the two applied before the stall are kept
	// by the checkpoint the stall itself makes.
	ing := newIngester(t, st, newDS(), srcs, ingest.WithCheckpoint(3, 1<<62))

	type want struct {
		walked, applied, entries uint64
		head, last               cid.Cid
		pending                  int
	}
	check := func(step string, w want) {
		t.Helper()
		s, ok := ing.Status(chain.Publisher)
		if !ok {
			t.Fatalf("%s: no status", step)
		}
		if s.AdsWalked != w.walked || s.AdsApplied != w.applied || s.EntriesIndexed != w.entries ||
			!s.Head.Equals(w.head) || !s.LastHead.Equals(w.last) || s.Pending != w.pending || s.Walking {
			t.Fatalf("%s: status walked %d applied %d entries %d head %s last %s pending %d walking %v;\nwant walked %d applied %d entries %d head %s last %s pending %d",
				step, s.AdsWalked, s.AdsApplied, s.EntriesIndexed, s.Head, s.LastHead, s.Pending, s.Walking,
				w.walked, w.applied, w.entries, w.head, w.last, w.pending)
		}
	}
	lastAd := func(step string, want cid.Cid) {
		t.Helper()
		info, err := st.Provider(ctx, chain.Provider)
		if err != nil {
			t.Fatalf("%s: provider record: %v", step, err)
		}
		if !info.LastAdvertisement.Equals(want) {
			t.Fatalf("%s: provider's LastAdvertisement %s, want %s", step, info.LastAdvertisement, want)
		}
	}

	head := chain.Head()
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, head); err != nil {
		t.Fatal(err)
	}
	check("first walk", want{ads, ads, ads * mhs, cid.Undef, head, 0})
	lastAd("first walk", head)

	// The same head again: nothing to walk, nothing counted.
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, head); err != nil {
		t.Fatal(err)
	}
	check("the same head again", want{ads, ads, ads * mhs, cid.Undef, head, 0})

	// Four more, the third of which cannot be fetched: the walk collects
	// the four, applies two and stalls.
	if err := chain.Extend(4); err != nil {
		t.Fatal(err)
	}
	head2 := chain.Head()
	stall, err := chain.Ad(ads + 2)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := chain.Block(ctx, stall.Entries)
	if err != nil {
		t.Fatal(err)
	}
	chain.RemoveBlock(stall.Entries)
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, head2); !errors.Is(err, ingest.ErrFetch) {
		t.Fatalf("walk with entries missing: %v, want ErrFetch", err)
	}
	check("stalled walk", want{ads + 4, ads + 2, (ads + 2) * mhs, head2, head, 2})
	lastAd("stalled walk", chain.Ads[ads+1])

	// The entries come back: the walk resumes at the stalled ad.
	chain.SetBlock(stall.Entries, entries)
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, head2); err != nil {
		t.Fatal(err)
	}
	check("resumed walk", want{ads + 4, ads + 4, (ads + 4) * mhs, cid.Undef, head2, 0})
	lastAd("resumed walk", head2)
	equalModel(t, chain.Model(), st)
}
