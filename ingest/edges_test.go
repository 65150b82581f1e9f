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

// syncChain walks chain from scratch with opts into a fresh store and
// returns the walk's error and the store's agreement with the chain's
// model.
func syncChain(t *testing.T, chain *chaingen.Chain, opts ...ingest.Option) (walkErr, modelErr error) {
	t.Helper()
	ctx := context.Background()
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	st := memory.New()
	defer st.Close()
	ing := newIngester(t, st, newDS(), srcs, opts...)
	walkErr = ing.Sync(ctx, chain.Publisher, testAddrs, cid.Undef)
	return walkErr, chain.Model().Equal(ctx, st)
}

// TestAdDepthLimitEdge: a first walk of exactly the advertisement depth
// limit is indexed whole; one advertisement more fails with
// ErrDepthLimit.
func TestAdDepthLimitEdge(t *testing.T) {
	const n = 12
	chain := generate(t, chaingen.Config{Seed: 900, Ads: n, MhsPerAd: 3})
	if err, merr := syncChain(t, chain, ingest.WithDepthLimits(n, 100)); err != nil || merr != nil {
		t.Fatalf("a chain of %d ads under a limit of %d: %v; store: %v", n, n, err, merr)
	}
	if err, _ := syncChain(t, chain, ingest.WithDepthLimits(n-1, 100)); !errors.Is(err, ingest.ErrDepthLimit) {
		t.Fatalf("a chain of %d ads under a limit of %d: %v, want ErrDepthLimit", n, n-1, err)
	}
}

// TestEntriesDepthLimitEdge: an entry chain of exactly the entries depth
// limit (in chunks) is indexed whole; one chunk more fails with
// ErrDepthLimit.
func TestEntriesDepthLimitEdge(t *testing.T) {
	const chunks, perChunk = 5, 4
	chain := generate(t, chaingen.Config{Seed: 901, Ads: 1, MhsPerAd: chunks * perChunk, ChunkSize: perChunk})
	if err, merr := syncChain(t, chain, ingest.WithDepthLimits(100, chunks)); err != nil || merr != nil {
		t.Fatalf("%d chunks under a limit of %d: %v; store: %v", chunks, chunks, err, merr)
	}
	if err, _ := syncChain(t, chain, ingest.WithDepthLimits(100, chunks-1)); !errors.Is(err, ingest.ErrDepthLimit) {
		t.Fatalf("%d chunks under a limit of %d: %v, want ErrDepthLimit", chunks, chunks-1, err)
	}
}

// TestFirstSpillLimitEdge: a first walk whose advertisements take
// exactly the first walk's spill limit is indexed whole; a limit one
// byte smaller fails with ErrSpillLimit.
func TestFirstSpillLimitEdge(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 902, Ads: 6, MhsPerAd: 2})
	var total int64
	for _, c := range chain.Ads {
		b, err := chain.Block(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
	}
	if err, merr := syncChain(t, chain, ingest.WithSpillLimits(1<<30, total)); err != nil || merr != nil {
		t.Fatalf("ads of %d bytes under a first spill limit of %d: %v; store: %v", total, total, err, merr)
	}
	if err, _ := syncChain(t, chain, ingest.WithSpillLimits(1<<30, total-1)); !errors.Is(err, ingest.ErrSpillLimit) {
		t.Fatalf("ads of %d bytes under a first spill limit of %d: %v, want ErrSpillLimit", total, total-1, err)
	}
}
