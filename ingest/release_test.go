package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
)

// scribbler is a Syncer that takes blocks back (ReleaseBlock) and
// overwrites each one it is given at once, as a Syncer reusing the memory
// for the next block would later: whatever still points into a released
// block reads garbage. It counts the blocks given back and fails the test
// on one given back twice or not its own.
type scribbler struct {
	ingest.Syncer
	t *testing.T

	mu       sync.Mutex
	out      map[*byte]cid.Cid // blocks handed out and not given back
	released map[cid.Cid]int
}

func newScribbler(t *testing.T, src ingest.Syncer) *scribbler {
	return &scribbler{Syncer: src, t: t, out: make(map[*byte]cid.Cid), released: make(map[cid.Cid]int)}
}

func (s *scribbler) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	b, err := s.Syncer.Block(ctx, c)
	if err != nil || len(b) == 0 {
		return b, err
	}
	b = bytes.Clone(b) // its own memory, to scribble on
	s.mu.Lock()
	s.out[&b[0]] = c
	s.mu.Unlock()
	return b, nil
}

func (s *scribbler) ReleaseBlock(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.out[&b[0]]
	if !ok {
		s.t.Errorf("ReleaseBlock of a block not handed out, or given back twice")
		return
	}
	delete(s.out, &b[0])
	s.released[c]++
	for i := range b {
		b[i] = 0xee
	}
}

func (s *scribbler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.released)
}

// The walker gives back to a Syncer that takes them every entry chunk it
// has indexed, once, and keeps no reference into it: with each block
// overwritten as it is given back, and batches that span chunks (64
// multihashes of chunks of 50) or hold whole advertisements, every
// multihash is indexed as published, in both codecs and in both stores.
// (Without the sink's copy of the multihashes, a batch points into chunks
// already overwritten.)
func TestReleasedBlocks(t *testing.T) {
	for _, codec := range []uint64{schema.DagJSON, schema.DagCBOR} {
		for _, bk := range backends {
			for _, batch := range []int{64, ingest.DefaultBatchSize} {
				t.Run(fmt.Sprintf("0x%x/%s/batch-%d", codec, bk.name, batch), func(t *testing.T) {
					t.Parallel()
					chain := generate(t, chaingen.Config{Seed: 90, Ads: 12, MhsPerAd: 230, ChunkSize: 50, Codec: codec})
					src := newScribbler(t, chain.Source())
					srcs := newSources()
					srcs.set(chain.Publisher, src)
					st := bk.open(t)
					ing := newIngester(t, st, newDS(), srcs, ingest.WithBatchSize(batch))
					if err := ing.Sync(context.Background(), chain.Publisher, testAddrs, cid.Undef); err != nil {
						t.Fatal(err)
					}
					equalModel(t, chain.Model(), st)
					if got, want := src.count(), 12*5; got != want {
						t.Errorf("%d entry chunks given back, want %d", got, want)
					}
				})
			}
		}
	}
}

// Entries and FirstEntries give nothing back: their callers may keep the
// multihashes they are given, which then stay as they were.
func TestEntriesReleaseNothing(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 91, Ads: 1, MhsPerAd: 9, ChunkSize: 3, Codec: schema.DagCBOR})
	ing := newIngester(t, nil, newDS(), newSources(), ingest.WithApplier(func(peer.ID) ingest.Applier { return nil }))
	x, err := chain.Ad(0)
	if err != nil {
		t.Fatal(err)
	}
	ad := ingest.Ad{Cid: chain.Ads[0], Ad: x}
	src := newScribbler(t, chain.Source())
	var kept, copies []multihash.Multihash
	keep := func(mh multihash.Multihash) error {
		kept = append(kept, mh)
		copies = append(copies, bytes.Clone(mh))
		return nil
	}
	if err := ing.Entries(ctx, src, ad, keep); err != nil {
		t.Fatal(err)
	}
	if err := ing.FirstEntries(ctx, src, ad, 2, keep); err != nil {
		t.Fatal(err)
	}
	if n := src.count(); n != 0 {
		t.Fatalf("%d blocks given back", n)
	}
	if len(kept) != 9+6 {
		t.Fatalf("%d multihashes yielded, want 15", len(kept))
	}
	for i := range kept {
		if !bytes.Equal(kept[i], copies[i]) {
			t.Fatalf("multihash %d changed after it was yielded", i)
		}
	}
}

// Over HTTP, the ipnisync Client reads bodies into the memory of the
// chunks given back: four publishers' chains of both codecs, walked at
// once, index exactly what they publish.
func TestReleasedBlocksOverHTTP(t *testing.T) {
	ctx := context.Background()
	var hs httpSyncers
	defer hs.close()
	st := backends[1].open(t)
	ing, err := ingest.New(st, newDS(), hs.syncer, ingest.WithBatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := range 4 {
		codec := []uint64{schema.DagJSON, schema.DagCBOR}[p%2]
		chain := generate(t, chaingen.Config{Seed: 92 + uint64(p), Ads: 8, MhsPerAd: 700, ChunkSize: 128 + 100*p, Codec: codec})
		addrs := httpPublisher(t, chain)
		wg.Go(func() {
			if err := ing.Sync(ctx, chain.Publisher, addrs, cid.Undef); err != nil {
				t.Errorf("publisher %d: %v", p, err)
				return
			}
			if err := chain.Model().Equal(ctx, providerView{st, chain.Provider}); err != nil {
				t.Errorf("publisher %d: %v", p, err)
			}
		})
	}
	wg.Wait()
}
