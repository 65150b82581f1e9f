package chaingen

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/schema"
)

// onDemandConfigs are the ordinary chains OnDemand makes: both codecs,
// both signers, chunks that divide the ads evenly or not, ads of varying
// sizes.
var onDemandConfigs = map[string]Config{
	"plain":    {Seed: 1, Ads: 12, MhsPerAd: 25, ChunkSize: 10},
	"even":     {Seed: 11, Ads: 5, MhsPerAd: 20, ChunkSize: 10, PublisherSigns: true},
	"varying":  {Seed: 12, Ads: 60, MinMhsPerAd: 1, MhsPerAd: 16, ChunkSize: 5, PublisherSigns: true},
	"dagcbor":  {Seed: 13, Ads: 9, MinMhsPerAd: 20, MhsPerAd: 30, ChunkSize: 7, Codec: schema.DagCBOR},
	"defaults": {Seed: 14, Ads: 3, MhsPerAd: 2500},
	"empty":    {Seed: 15, MhsPerAd: 3},
}

func newOnDemand(t testing.TB, cfg Config) *OnDemand {
	t.Helper()
	o, err := NewOnDemand(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewOnDemand(%+v): %v", cfg, err)
	}
	return o
}

// TestOnDemandEqualsGenerate checks that an OnDemand chain serves every
// block of the chain Generate makes of the same Config, byte for byte,
// under the same CIDs, and nothing else; and that its multihashes are the
// model's, each under the context of the ad AdOf names.
func TestOnDemandEqualsGenerate(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range onDemandConfigs {
		t.Run(name, func(t *testing.T) {
			c, o := generate(t, cfg), newOnDemand(t, cfg)
			if o.Head() != c.Head() || o.Len() != c.Len() || o.Blocks() != c.Blocks() {
				t.Fatalf("head %s, %d ads, %d blocks; Generate: %s, %d, %d",
					o.Head(), o.Len(), o.Blocks(), c.Head(), c.Len(), c.Blocks())
			}
			if o.Provider != c.Provider || o.Publisher != c.Publisher || !o.PublisherKey.Equals(c.PublisherKey) {
				t.Fatal("keys differ from Generate's")
			}
			for i, id := range c.Ads {
				if got := o.Ad(i); got != id {
					t.Fatalf("ad %d is %s, Generate's %s", i, got, id)
				}
			}
			for id, want := range c.blocks {
				got, err := o.Source().Block(ctx, id)
				if err != nil {
					t.Fatalf("block %s: %v", id, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("block %s: %d bytes differ from Generate's %d", id, len(got), len(want))
				}
			}
			m := c.Model()
			if o.Multihashes() != uint64(m.Multihashes()) {
				t.Fatalf("%d multihashes, model %d", o.Multihashes(), m.Multihashes())
			}
			for ord := range o.Multihashes() {
				if !bytes.Equal(o.Multihash(ord), AppendMultihash(nil, cfg.Seed, ord)) {
					t.Fatalf("multihash %d differs from AppendMultihash's", ord)
				}
				vs := m.Values(o.Multihash(ord))
				if len(vs) != 1 {
					t.Fatalf("multihash %d has %d values in the model", ord, len(vs))
				}
				ad, err := c.Ad(o.AdOf(ord))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(vs[0].ContextID, ad.ContextID) {
					t.Fatalf("multihash %d: AdOf says ad %d, context %x; model has %x", ord, o.AdOf(ord), ad.ContextID, vs[0].ContextID)
				}
			}
			if o.AdOf(o.Multihashes()) != -1 {
				t.Fatal("AdOf past the end is not -1")
			}
		})
	}
}

func TestMinMhsPerAd(t *testing.T) {
	c := generate(t, Config{Seed: 21, Ads: 300, MinMhsPerAd: 1, MhsPerAd: 16, ChunkSize: 4})
	seen := map[int]bool{}
	total := 0
	for i := range c.Len() {
		n := 0
		for _, s := range c.ops[i].spans {
			n += int(s.n)
		}
		if n < 1 || n > 16 {
			t.Fatalf("ad %d has %d multihashes, want 1 to 16", i+1, n)
		}
		seen[n] = true
		total += n
	}
	if !seen[1] || !seen[16] || len(seen) < 12 {
		t.Fatalf("300 ads take only the sizes %v", seen)
	}
	if got := c.Model().Multihashes(); got != total {
		t.Fatalf("model has %d multihashes, ads %d", got, total)
	}
	// MinMhsPerAd equal to MhsPerAd is the fixed size.
	a := generate(t, Config{Seed: 22, Ads: 4, MhsPerAd: 9})
	b := generate(t, Config{Seed: 22, Ads: 4, MhsPerAd: 9, MinMhsPerAd: 9})
	if a.Head() != b.Head() {
		t.Fatal("MinMhsPerAd = MhsPerAd changes the chain")
	}
}

func TestOnDemandErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Ads: 2, MhsPerAd: 3, RemoveEvery: 2}, {Ads: 2, MhsPerAd: 3, UpdateEvery: 2}, {Ads: 2, MhsPerAd: 3, NoEntriesEvery: 2},
		{Ads: 2, MhsPerAd: 3, ReuseEvery: 2}, {Ads: 2, MhsPerAd: 3, ExtendedEvery: 2}, {Ads: 2, MhsPerAd: 3, SharedMhs: 1},
		{Ads: 2, MhsPerAd: 3, PieceContextEvery: 2}, {Ads: 2}, {Ads: -1, MhsPerAd: 3}, {Ads: 2, MhsPerAd: 3, Codec: 0x55},
	} {
		if _, err := NewOnDemand(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewOnDemand(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	ctx := context.Background()
	o := newOnDemand(t, Config{Seed: 23, Ads: 3, MhsPerAd: 10})
	head := o.Head()
	other, _ := multihash.Sum([]byte("not a block"), multihash.SHA2_256, -1)
	for _, id := range []cid.Cid{
		cid.Undef,
		cid.NewCidV1(schema.DagJSON, other),
		cid.NewCidV1(schema.DagCBOR, head.Hash()), // the head's digest under another codec
		cid.NewCidV0(head.Hash()),
		schema.NoEntries,
	} {
		if _, err := o.Block(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Block(%s) = %v, want ErrNotFound", id, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := o.Block(cctx, head); !errors.Is(err, context.Canceled) {
		t.Errorf("Block with a done context = %v", err)
	}
	if _, err := NewOnDemand(cctx, Config{Seed: 23, Ads: 3, MhsPerAd: 10}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewOnDemand with a done context = %v", err)
	}
}

// TestOnDemandConcurrent walks the chain from many goroutines; run it with
// -race.
func TestOnDemandConcurrent(t *testing.T) {
	ctx := context.Background()
	o := newOnDemand(t, Config{Seed: 24, Ads: 20, MinMhsPerAd: 3, MhsPerAd: 40, ChunkSize: 8})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			n := uint64(0)
			for id := o.Head(); id.Defined(); {
				b, err := o.Block(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				ad, err := schema.DecodeAdvertisement(id, b)
				if err != nil {
					t.Error(err)
					return
				}
				for next := ad.Entries; next.Defined(); {
					b, err := o.Block(ctx, next)
					if err != nil {
						t.Error(err)
						return
					}
					ch, err := schema.DecodeEntryChunk(next, b)
					if err != nil {
						t.Error(err)
						return
					}
					n += uint64(len(ch.Entries))
					next = ch.Next
				}
				id = ad.PreviousID
			}
			if n != o.Multihashes() {
				t.Errorf("walked %d multihashes of %d", n, o.Multihashes())
			}
		})
	}
	wg.Wait()
}
