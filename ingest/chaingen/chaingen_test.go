package chaingen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/metadata"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// configs covers every kind of ad, both codecs and both signers.
var configs = map[string]Config{
	"plain": {Seed: 1, Ads: 12, MhsPerAd: 25, ChunkSize: 10},
	"everything": {Seed: 2, Ads: 60, MhsPerAd: 30, ChunkSize: 7, RemoveEvery: 4, UpdateEvery: 3,
		ReuseEvery: 5, ExtendedEvery: 6, SharedMhs: 5, PublisherSigns: true},
	"dagcbor": {Seed: 3, Ads: 40, MhsPerAd: 20, ChunkSize: 6, Codec: schema.DagCBOR, RemoveEvery: 3,
		NoEntriesEvery: 4, ReuseEvery: 7, ExtendedEvery: 5, SharedMhs: 20},
	"remove-all": {Seed: 4, Ads: 20, MhsPerAd: 5, RemoveEvery: 2},
	"no-entries": {Seed: 5, Ads: 15, ExtendedEvery: 2, UpdateEvery: 3, PublisherSigns: true},
	"empty":      {Seed: 6},
}

func generate(t testing.TB, cfg Config) *Chain {
	t.Helper()
	c, err := Generate(cfg)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", cfg, err)
	}
	return c
}

// applyAd is the trivially correct reference applier: one ad, its entry
// chunks followed in order, straight into s.
func applyAd(ctx context.Context, t testing.TB, c *Chain, s store.Store, id cid.Cid) {
	t.Helper()
	b, err := c.Block(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := schema.DecodeAdvertisement(id, b)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := peer.Decode(ad.Provider)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case ad.IsRm:
		err = s.RemoveProviderContext(ctx, prov, ad.ContextID)
	case !ad.HasEntries():
		if err = s.UpdateMetadata(ctx, prov, ad.ContextID, ad.Metadata); errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	default:
		var mhs []multihash.Multihash
		for next := ad.Entries; next.Defined(); {
			b, err := c.Block(ctx, next)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := schema.DecodeEntryChunk(next, b)
			if err != nil {
				t.Fatal(err)
			}
			mhs = append(mhs, ch.Entries...)
			next = ch.Next
		}
		err = s.Put(ctx, store.Value{ProviderID: prov, ContextID: ad.ContextID, Metadata: ad.Metadata}, mhs...)
	}
	if err != nil {
		t.Fatalf("apply %s: %v", id, err)
	}
}

func TestDeterminism(t *testing.T) {
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			a, b := generate(t, cfg), generate(t, cfg)
			if a.Head() != b.Head() || !slices.Equal(a.Ads, b.Ads) {
				t.Fatalf("heads differ: %s and %s", a.Head(), b.Head())
			}
			if len(a.blocks) != len(b.blocks) {
				t.Fatalf("%d and %d blocks", len(a.blocks), len(b.blocks))
			}
			for id, data := range a.blocks {
				if !bytes.Equal(data, b.blocks[id]) {
					t.Fatalf("block %s differs", id)
				}
			}
			if a.Provider != b.Provider || a.Publisher != b.Publisher || !slices.Equal(a.Extended, b.Extended) {
				t.Fatal("keys differ")
			}
			if cfg.Ads > 0 {
				cfg.Seed++
				if c := generate(t, cfg); c.Head() == a.Head() || c.Provider == a.Provider {
					t.Fatal("another seed gives the same chain")
				}
			}
		})
	}
}

// TestBlocks decodes every block reachable from the head, checks every
// signature and the shape of every field, and that nothing else is stored.
func TestBlocks(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			c := generate(t, cfg)
			if len(c.Ads) != cfg.Ads || c.Len() != cfg.Ads {
				t.Fatalf("%d ads, want %d", len(c.Ads), cfg.Ads)
			}
			wantCodec := cfg.Codec
			if wantCodec == 0 {
				wantCodec = schema.DagJSON
			}
			wantPublisher := c.Provider
			if cfg.PublisherSigns {
				if c.Publisher == c.Provider {
					t.Fatal("PublisherSigns: publisher is the provider")
				}
				wantPublisher = c.Publisher
			}
			seen := map[cid.Cid]bool{}
			kinds := map[string]int{}
			src := c.Source()
			head, err := src.Head(ctx)
			if err != nil || head != c.Head() {
				t.Fatalf("Source.Head = %s, %v", head, err)
			}
			for i := len(c.Ads) - 1; i >= 0; i-- {
				id := c.Ads[i]
				if id.Prefix().Codec != wantCodec {
					t.Fatalf("ad %d: codec 0x%x", i, id.Prefix().Codec)
				}
				b, err := src.Block(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				seen[id] = true
				ad, err := schema.DecodeAdvertisement(id, b)
				if err != nil {
					t.Fatalf("ad %d: %v", i, err)
				}
				signer, err := ad.VerifySignature()
				if err != nil || signer != wantPublisher {
					t.Fatalf("ad %d: signer %s, %v; want %s", i, signer, err, wantPublisher)
				}
				if want := cid.Undef; i > 0 {
					want = c.Ads[i-1]
					if ad.PreviousID != want {
						t.Fatalf("ad %d: PreviousID %s, want %s", i, ad.PreviousID, want)
					}
				} else if ad.PreviousID.Defined() {
					t.Fatal("genesis ad has a PreviousID")
				}
				if ad.Provider != c.Provider.String() || !slices.Equal(ad.Addresses, c.Addrs) {
					t.Fatalf("ad %d: provider %s %v", i, ad.Provider, ad.Addresses)
				}
				if n := len(ad.ContextID); n < 8 || n > 32 {
					t.Fatalf("ad %d: context ID of %d bytes", i, n)
				}
				switch {
				case ad.IsRm:
					kinds["rm"]++
					if ad.ExtendedProvider != nil {
						t.Fatalf("ad %d: IsRm with extended providers", i)
					}
				case !ad.HasEntries():
					kinds["noentries"]++
				default:
					kinds["entries"]++
				}
				if !ad.IsRm {
					md, err := metadata.Decode(ad.Metadata)
					if err != nil || md.Len() == 0 {
						t.Fatalf("ad %d: metadata %x: %v", i, ad.Metadata, err)
					}
					if _, ok := md.Get(metadata.CodeGraphsyncFilecoinV1); ok {
						kinds["graphsync"]++
					}
				}
				if ep := ad.ExtendedProvider; ep != nil {
					kinds["extended"]++
					if len(ep.Providers) < 2 || ep.Providers[1].ID != c.Extended[0].String() {
						t.Fatalf("ad %d: extended providers %+v", i, ep.Providers)
					}
				}
				var n int
				for e := ad.Entries; ad.HasEntries() && e.Defined(); {
					b, err := c.Block(ctx, e)
					if err != nil {
						t.Fatal(err)
					}
					seen[e] = true
					ch, err := schema.DecodeEntryChunk(e, b)
					if err != nil {
						t.Fatalf("ad %d: chunk: %v", i, err)
					}
					if len(ch.Entries) > c.cfg.ChunkSize || len(ch.Entries) == 0 {
						t.Fatalf("ad %d: chunk of %d entries", i, len(ch.Entries))
					}
					for _, mh := range ch.Entries {
						if dm, err := multihash.Decode(mh); err != nil || dm.Code != multihash.SHA2_256 {
							t.Fatalf("ad %d: multihash %x: %v", i, mh, err)
						}
					}
					n += len(ch.Entries)
					e = ch.Next
				}
				if ad.HasEntries() && n != cfg.MhsPerAd {
					t.Fatalf("ad %d: %d multihashes, want %d", i, n, cfg.MhsPerAd)
				}
			}
			if len(seen) != c.Blocks() {
				t.Fatalf("%d blocks reachable, %d stored", len(seen), c.Blocks())
			}
			t.Logf("%d ads: %v", cfg.Ads, kinds)
			if name == "everything" || name == "dagcbor" {
				for _, k := range []string{"rm", "noentries", "entries", "extended", "graphsync"} {
					if kinds[k] == 0 {
						t.Errorf("no ad of kind %s", k)
					}
				}
			}
		})
	}
}

// TestModel applies the chain ad by ad with the reference applier and
// compares the store with ModelAt after each ad, and with Model at the end.
func TestModel(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			c := generate(t, cfg)
			s := memory.New()
			defer s.Close()
			if err := c.ModelAt(-1).Equal(ctx, s); err != nil || c.ModelAt(-1).Multihashes() != 0 {
				t.Fatalf("empty model: %v", err)
			}
			for i, id := range c.Ads {
				applyAd(ctx, t, c, s, id)
				if err := c.ModelAt(i).Equal(ctx, s); err != nil {
					t.Fatalf("after ad %d: %v", i, err)
				}
			}
			m := c.Model()
			if err := m.Equal(ctx, s); err != nil {
				t.Fatal(err)
			}
			if m.Multihashes() != c.ModelAt(len(c.Ads)+10).Multihashes() {
				t.Fatal("ModelAt past the end differs from Model")
			}
			var all int
			for e, err := range s.All(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if len(e.Values) > 0 {
					all++
				}
			}
			if all != m.Multihashes() {
				t.Fatalf("store holds %d multihashes, model %d", all, m.Multihashes())
			}
			t.Logf("%d multihashes in %d contexts", m.Multihashes(), len(m.Contexts()))
		})
	}
}

func TestModelRules(t *testing.T) {
	t.Run("no removals", func(t *testing.T) {
		c := generate(t, Config{Seed: 7, Ads: 9, MhsPerAd: 11})
		if got := c.Model().Multihashes(); got != 99 {
			t.Fatalf("%d multihashes, want 99", got)
		}
		if got := len(c.Model().Contexts()); got != 9 {
			t.Fatalf("%d contexts, want 9", got)
		}
	})
	t.Run("removed context has no entries", func(t *testing.T) {
		// Ad 2 removes the context of ad 1, the only one.
		c := generate(t, Config{Seed: 8, Ads: 2, MhsPerAd: 3, RemoveEvery: 2})
		first := c.ModelAt(0)
		if first.Multihashes() != 3 || c.Model().Multihashes() != 0 {
			t.Fatalf("%d then %d multihashes", first.Multihashes(), c.Model().Multihashes())
		}
		for _, v := range first.Contexts() {
			ad, err := c.Ad(1)
			if err != nil || !ad.IsRm || !bytes.Equal(ad.ContextID, v.ContextID) {
				t.Fatalf("ad 1 = %+v, %v", ad, err)
			}
		}
	})
	t.Run("update replaces metadata", func(t *testing.T) {
		// Ad 2 is a NoEntries update of the only context.
		c := generate(t, Config{Seed: 9, Ads: 2, MhsPerAd: 3, UpdateEvery: 2})
		ad, err := c.Ad(1)
		if err != nil || ad.HasEntries() || ad.IsRm {
			t.Fatalf("ad 1 = %+v, %v", ad, err)
		}
		before, after := c.ModelAt(0).Contexts(), c.Model().Contexts()
		if len(after) != 1 || !after[0].SameContext(before[0]) || !bytes.Equal(after[0].Metadata, ad.Metadata) ||
			bytes.Equal(after[0].Metadata, before[0].Metadata) {
			t.Fatalf("before %v after %v", before, after)
		}
	})
	t.Run("shared multihashes have two values", func(t *testing.T) {
		c := generate(t, Config{Seed: 10, Ads: 2, MhsPerAd: 4, SharedMhs: 2})
		m := c.Model()
		if m.Multihashes() != 6 {
			t.Fatalf("%d multihashes, want 6", m.Multihashes())
		}
		var two int
		for i := range uint64(6) {
			if len(m.Values(appendMultihash(nil, 10, i))) == 2 {
				two++
			}
		}
		if two != 2 {
			t.Fatalf("%d multihashes with two values, want 2", two)
		}
	})
	t.Run("values", func(t *testing.T) {
		c := generate(t, Config{Seed: 11, Ads: 1, MhsPerAd: 1})
		m := c.Model()
		vs := m.Values(appendMultihash(nil, 11, 0))
		if len(vs) != 1 || vs[0].ProviderID != c.Provider || vs[0].Validate() != nil {
			t.Fatalf("values %v", vs)
		}
		vs[0].ContextID[0] ^= 0xff // a copy
		if bytes.Equal(m.Values(appendMultihash(nil, 11, 0))[0].ContextID, vs[0].ContextID) {
			t.Fatal("Values returned the model's own bytes")
		}
		if m.Values(multihash.Multihash("nope")) != nil || m.Values(appendMultihash(nil, 11, 1)) != nil {
			t.Fatal("values for an unknown multihash")
		}
	})
}

func TestExtend(t *testing.T) {
	ctx := context.Background()
	cfg := configs["everything"]
	c := generate(t, cfg)
	before := slices.Clone(c.Ads)
	blocks := c.Blocks()
	if err := c.Extend(15); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Ads[:len(before)], before) || len(c.Ads) != len(before)+15 || c.Blocks() <= blocks {
		t.Fatal("Extend changed earlier ads or added none")
	}
	ad, err := c.Ad(len(before))
	if err != nil || ad.PreviousID != before[len(before)-1] {
		t.Fatalf("first new ad: %v, %v", ad, err)
	}
	cfg.Ads += 15
	if whole := generate(t, cfg); !slices.Equal(whole.Ads, c.Ads) {
		t.Fatal("Generate(a)+Extend(b) differs from Generate(a+b)")
	}
	s := memory.New()
	defer s.Close()
	for _, id := range c.Ads {
		applyAd(ctx, t, c, s, id)
	}
	if err := c.Model().Equal(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Extend(-1); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Extend(-1) = %v", err)
	}
}

func TestEqualReportsDifferences(t *testing.T) {
	ctx := context.Background()
	c := generate(t, Config{Seed: 12, Ads: 5, MhsPerAd: 30, UpdateEvery: 4})
	s := memory.New()
	defer s.Close()
	for _, id := range c.Ads {
		applyAd(ctx, t, c, s, id)
	}
	m := c.Model()
	vs := m.Contexts()
	mh0 := multihash.Multihash(appendMultihash(nil, 12, 0))
	if err := s.Remove(ctx, vs[0].ProviderID, vs[0].ContextID, mh0); err != nil {
		t.Fatal(err)
	}
	stranger, _ := multihash.Sum([]byte("stranger"), multihash.SHA2_256, -1)
	if err := s.Put(ctx, vs[1], stranger); err != nil {
		t.Fatal(err)
	}
	err := m.Equal(ctx, s)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Equal = %v", err)
	}
	for _, want := range []string{"2 multihashes differ", mh0.B58String() + ": Get returns no values",
		stranger.B58String() + ": not in the model"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}

	// 30 more, of which the error lists the first maxDiffs.
	if err := s.UpdateMetadata(ctx, vs[2].ProviderID, vs[2].ContextID, []byte{1}); err != nil {
		t.Fatal(err)
	}
	err = m.Equal(ctx, s)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "32 multihashes differ (model has 120), first 10:") {
		t.Fatalf("Equal = %v", err)
	}
	if n := strings.Count(err.Error(), "\n\t"); n != maxDiffs {
		t.Errorf("%d differences listed, want %d", n, maxDiffs)
	}
	s.Close()
	if err := m.Equal(ctx, s); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Equal on a closed store = %v", err)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	c := generate(t, Config{Seed: 13, Ads: 3, MhsPerAd: 4})
	ad0 := c.Ads[0]
	if err := c.Corrupt(ad0); err != nil {
		t.Fatal(err)
	}
	b, err := c.Block(ctx, ad0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schema.DecodeAdvertisement(ad0, b); !errors.Is(err, schema.ErrHashMismatch) {
		t.Fatalf("corrupt block decodes with %v", err)
	}
	if _, err := c.Ad(0); !errors.Is(err, schema.ErrHashMismatch) {
		t.Fatalf("Ad(0) of a corrupt block = %v", err)
	}
	b[0] ^= 0xff // Block returns a copy
	if again, _ := c.Block(ctx, ad0); bytes.Equal(again, b) {
		t.Fatal("Block returned the chain's own bytes")
	}

	ad2, _ := c.Block(ctx, c.Ads[2])
	c.SetBlock(c.Ads[1], ad2)
	if b, _ := c.Block(ctx, c.Ads[1]); !bytes.Equal(b, ad2) {
		t.Fatal("SetBlock did not replace the block")
	}
	c.RemoveBlock(c.Ads[2])
	if _, err := c.Block(ctx, c.Ads[2]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed block: %v", err)
	}
	if err := c.Corrupt(c.Ads[2]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Corrupt of a missing block = %v", err)
	}
	if _, err := c.Block(ctx, schema.NoEntries); !errors.Is(err, ErrNotFound) {
		t.Fatalf("NoEntries: %v", err)
	}
	if _, err := c.Ad(3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Ad(3) = %v", err)
	}
	if c.Model().Multihashes() != 12 {
		t.Fatal("faults changed the model")
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Source().Head(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Head on a done context = %v", err)
	}
	if _, err := c.Source().Block(done, c.Ads[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Block on a done context = %v", err)
	}
	empty := generate(t, Config{})
	if h, err := empty.Source().Head(ctx); h.Defined() || err != nil || empty.Blocks() != 0 {
		t.Fatalf("empty chain: head %s, %v", h, err)
	}
}

func TestOversizeChunk(t *testing.T) {
	lane.Integration(t, "builds a 4 MiB block")
	c := generate(t, Config{Seed: 14, Ads: 1, MhsPerAd: 90000, ChunkSize: 90000})
	ad, err := c.Ad(0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Block(context.Background(), ad.Entries)
	if _, err := schema.DecodeEntryChunk(ad.Entries, b); !errors.Is(err, schema.ErrBlockTooLarge) {
		t.Fatalf("chunk of %d bytes decodes with %v", len(b), err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Ads: -1}, {MhsPerAd: -1}, {RemoveEvery: -2}, {ChunkSize: -1},
		{ChunkSize: schema.MaxChunkEntries + 1}, {Codec: 0x55}, {MhsPerAd: 2, SharedMhs: 3},
		{MinMhsPerAd: -1}, {MhsPerAd: 2, MinMhsPerAd: 3}, {MhsPerAd: 5, MinMhsPerAd: 2, SharedMhs: 3},
	} {
		if _, err := Generate(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Generate(%+v) = %v", cfg, err)
		}
	}
}

// TestConcurrent fetches and compares while the chain grows; run it with
// -race.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	c := generate(t, Config{Seed: 15, Ads: 5, MhsPerAd: 10, RemoveEvery: 3})
	src := c.Source()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				head, err := src.Head(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := src.Block(ctx, head)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := schema.DecodeAdvertisement(head, b); err != nil {
					t.Error(err)
					return
				}
				_ = c.Model().Multihashes()
				_ = c.Blocks()
			}
		})
	}
	for range 10 {
		if err := c.Extend(2); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if c.Len() != 25 {
		t.Fatalf("%d ads, want 25", c.Len())
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, cfg := range []Config{
		{Seed: 1, Ads: 100, MhsPerAd: 10000},
		{Seed: 1, Ads: 100, MhsPerAd: 10000, Codec: schema.DagCBOR},
		{Seed: 1, Ads: 2000},
	} {
		name := fmt.Sprintf("ads=%d/mhs=%d/codec=%#x", cfg.Ads, cfg.MhsPerAd, cfg.Codec)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(cfg); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(cfg.Ads)*n/b.Elapsed().Seconds(), "ads/s")
			if cfg.MhsPerAd > 0 {
				b.ReportMetric(float64(cfg.Ads*cfg.MhsPerAd)*n/b.Elapsed().Seconds(), "mhs/s")
			}
		})
	}
}

func BenchmarkModel(b *testing.B) {
	c := generate(b, Config{Seed: 1, Ads: 100, MhsPerAd: 10000, RemoveEvery: 10})
	for b.Loop() {
		_ = c.Model()
	}
}
