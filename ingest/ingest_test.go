package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

var chainConfigs = []struct {
	name string
	cfg  chaingen.Config
}{
	{"plain", chaingen.Config{Seed: 1, Ads: 20, MhsPerAd: 50, ChunkSize: 16}},
	{"mixed", chaingen.Config{Seed: 2, Ads: 60, MhsPerAd: 40, ChunkSize: 7, RemoveEvery: 4, UpdateEvery: 3,
		ReuseEvery: 5, ExtendedEvery: 6, SharedMhs: 5}},
	{"cbor-publisher", chaingen.Config{Seed: 3, Ads: 40, MhsPerAd: 30, ChunkSize: 10, Codec: schema.DagCBOR,
		RemoveEvery: 3, UpdateEvery: 7, ReuseEvery: 4, ExtendedEvery: 2, PublisherSigns: true}},
	{"noentries", chaingen.Config{Seed: 4, Ads: 30}},
}

// A generated chain ingested into each backend ends exactly equal to the
// model, and the provider record names the head.
func TestIngestChain(t *testing.T) {
	for _, b := range backends {
		for _, cc := range chainConfigs {
			t.Run(b.name+"/"+cc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				chain := generate(t, cc.cfg)
				st := b.open(t)
				srcs := newSources()
				srcs.set(chain.Publisher, chain.Source())
				ing := newIngester(t, st, newDS(), srcs, ingest.WithBatchSize(64))
				if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
					t.Fatal(err)
				}
				equalModel(t, chain.Model(), st)
				info, err := st.Provider(ctx, chain.Provider)
				if err != nil {
					t.Fatal(err)
				}
				if !info.LastAdvertisement.Equals(chain.Head()) || info.Publisher.ID != chain.Publisher ||
					len(info.AddrInfo.Addrs) != len(chain.Addrs) || info.LastAdvertisementTime.IsZero() || info.LastError != "" {
					t.Fatalf("provider record %+v", info)
				}
				if cc.cfg.ExtendedEvery > 0 && info.ExtendedProviders == nil {
					t.Fatal("no extended providers recorded")
				}
				st0, _ := ing.Status(chain.Publisher)
				if !st0.LastHead.Equals(chain.Head()) || st0.AdsApplied != uint64(cc.cfg.Ads) || st0.Pending != 0 {
					t.Fatalf("status %+v", st0)
				}
				// Walking again to the same head does nothing.
				if err := ing.Sync(ctx, chain.Publisher, nil, chain.Head()); err != nil {
					t.Fatal(err)
				}
				if st1, _ := ing.Status(chain.Publisher); st1.AdsWalked != st0.AdsWalked {
					t.Fatalf("second sync walked %d ads", st1.AdsWalked-st0.AdsWalked)
				}
			})
		}
	}
}

// Run ingests several publishers announced at once, through the scheduler,
// with fewer workers than publishers.
func TestRunManyPublishers(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srcs := newSources()
	var chains []*chaingen.Chain
	for seed := range uint64(5) {
		c := generate(t, chaingen.Config{Seed: 100 + seed, Ads: 15, MhsPerAd: 20, ChunkSize: 6, RemoveEvery: 4, UpdateEvery: 3})
		chains = append(chains, c)
		srcs.set(c.Publisher, c.Source())
	}
	ing := newIngester(t, st, newDS(), srcs, ingest.WithWorkers(2))
	runToHeads(t, ing, chains)
	for _, c := range chains {
		equalModel(t, c.Model(), providerView{st, c.Provider})
	}
	if n := len(ing.Statuses()); n != len(chains) {
		t.Fatalf("%d statuses", n)
	}
}

// A head announced in the middle of a walk is walked after it: the first
// walk ends at the head it started from.
func TestNewHeadMidWalk(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chain := generate(t, chaingen.Config{Seed: 7, Ads: 30, MhsPerAd: 10, ChunkSize: 3, RemoveEvery: 5, ReuseEvery: 4})
	head0 := chain.Head()
	var ing *ingest.Ingester
	var once sync.Once
	src := &counting{Syncer: chain.Source()}
	src.at = func(n int64) {
		if n == 20 {
			once.Do(func() {
				if err := chain.Extend(12); err != nil {
					t.Error(err)
				}
				if err := ing.Announce(chain.Publisher, nil, chain.Head()); err != nil {
					t.Error(err)
				}
			})
		}
	}
	srcs := newSources()
	srcs.set(chain.Publisher, src)
	var mu sync.Mutex
	var heads []cid.Cid
	st := memory.New()
	defer st.Close()
	ing = newIngester(t, st, newDS(), srcs, ingest.WithHooks(ingest.Hooks{
		WalkDone: func(_ peer.ID, head cid.Cid, _ int, _ time.Duration) {
			mu.Lock()
			heads = append(heads, head)
			mu.Unlock()
		},
	}))
	done := make(chan error)
	go func() { done <- ing.Run(ctx) }()
	if err := ing.Announce(chain.Publisher, testAddrs, head0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new head", func() bool {
		s, _ := ing.Status(chain.Publisher)
		return s.LastHead.Equals(chain.Head())
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
	mu.Lock()
	defer mu.Unlock()
	if len(heads) != 2 || !heads[0].Equals(head0) || !heads[1].Equals(chain.Head()) {
		t.Fatalf("walks ended at %v, want %s then %s", heads, head0, chain.Head())
	}
}

// putCounter records the contexts a store is asked to put.
type putCounter struct {
	store.Store
	mu   sync.Mutex
	puts map[string]int
}

func (p *putCounter) Put(ctx context.Context, v store.Value, mhs ...multihash.Multihash) error {
	p.mu.Lock()
	p.puts[string(v.ContextID)]++
	p.mu.Unlock()
	return p.Store.Put(ctx, v, mhs...)
}

// A context removed later in the same walk is never put at all.
func TestRemovedLaterNotIndexed(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 11, Ads: 50, MhsPerAd: 10, ChunkSize: 4, RemoveEvery: 3})
	mem := memory.New()
	defer mem.Close()
	st := &putCounter{Store: mem, puts: make(map[string]int)}
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	ing := newIngester(t, st, newDS(), srcs)
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), mem)
	removed := 0
	for i := range chain.Len() {
		ad, err := chain.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if ad.IsRm {
			removed++
			if n := st.puts[string(ad.ContextID)]; n != 0 {
				t.Errorf("context %x, removed by ad %d, was put %d times", ad.ContextID, i, n)
			}
		}
	}
	if removed == 0 {
		t.Fatal("the chain removes nothing")
	}
}

// Walks stopped at random points (ctx cancelled before a random fetch) and
// resumed by a new Ingester over the same datastore and store end equal to
// the model, for many seeds.
func TestResumeAfterCancel(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			chain := generate(t, chaingen.Config{Seed: 1000 + seed, Ads: 40, MhsPerAd: 12, ChunkSize: 5,
				RemoveEvery: 3, UpdateEvery: 4, ReuseEvery: 5, SharedMhs: 2})
			rng := rand.New(rand.NewPCG(seed, 1))
			st := memory.New()
			defer st.Close()
			ds := newDS()
			restarts := 0
			for {
				ctx, cancel := context.WithCancel(context.Background())
				stopAt := int64(1 + rng.IntN(40+20*min(restarts, 1)))
				src := &counting{Syncer: chain.Source(), at: func(n int64) {
					if n == stopAt {
						cancel()
					}
				}}
				srcs := newSources()
				srcs.set(chain.Publisher, src)
				// Checkpoints every 3 ads: a restart replays up to 3.
				ing := newIngester(t, st, ds, srcs, ingest.WithCheckpoint(3, time.Hour), ingest.WithBatchSize(7))
				err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head())
				cancel()
				if err == nil {
					break
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("restart %d: %v", restarts, err)
				}
				restarts++
			}
			if restarts == 0 {
				t.Fatal("never interrupted")
			}
			equalModel(t, chain.Model(), st)
		})
	}
}

// Announce refuses a denied publisher; SetPolicy changes the decision.
func TestPolicy(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 5, Ads: 1, PublisherSigns: true})
	st := memory.New()
	defer st.Close()
	ing := newIngester(t, st, newDS(), newSources(), ingest.WithPolicy(ingest.Policy{Deny: []peer.ID{chain.Publisher}}))
	if err := ing.Announce(chain.Publisher, testAddrs, chain.Head()); !errors.Is(err, ingest.ErrNotAllowed) {
		t.Fatalf("denied announce: %v", err)
	}
	if err := ing.Sync(context.Background(), chain.Publisher, testAddrs, chain.Head()); !errors.Is(err, ingest.ErrNotAllowed) {
		t.Fatalf("denied sync: %v", err)
	}
	ing.SetPolicy(ingest.Policy{Allow: []peer.ID{chain.Publisher}})
	if err := ing.Announce(chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	p := ingest.Policy{Allow: []peer.ID{chain.Publisher}, Deny: []peer.ID{chain.Provider}}
	if !p.Allowed(chain.Publisher) || (ingest.Policy{Allow: []peer.ID{chain.Provider}}).Allowed(chain.Publisher) || !(ingest.Policy{}).Allowed(chain.Publisher) {
		t.Fatal("Policy.Allowed")
	}
}

// Reset makes a walker start after a given ad, as a handoff from a frozen
// indexer does: only the later ads are applied.
func TestWalkerReset(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 21, Ads: 20, MhsPerAd: 5, ChunkSize: 5})
	st := memory.New()
	defer st.Close()
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	ing := newIngester(t, st, newDS(), srcs)
	w, err := ing.Walker(chain.Publisher)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Reset(ctx, chain.Ads[9]); err != nil {
		t.Fatal(err)
	}
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	if _, applied := w.Progress(); applied != 10 {
		t.Fatalf("applied %d ads after Reset, want 10", applied)
	}
	// Ad 10 is new; ad 9 was applied by the frozen indexer, not here.
	for i, want := range []bool{false, true} {
		ad, _ := chain.Ad(9 + i)
		first, _ := ad.Entries, 0
		blk, err := chain.Block(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := schema.DecodeEntryChunk(first, blk)
		if err != nil {
			t.Fatal(err)
		}
		vals, _ := st.Get(ctx, ch.Entries[0])
		if got := len(vals) == 1 && bytes.Equal(vals[0].ContextID, ad.ContextID); got != want {
			t.Fatalf("ad %d indexed = %v, want %v", 9+i, got, want)
		}
	}
}
