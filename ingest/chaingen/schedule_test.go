package chaingen

import (
	"slices"
	"testing"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/store"
)

// TestLasting checks Lasting against the chain itself: the multihash it
// names appears at its ad and keeps the same non-empty values in every
// model up to the horizon, while every earlier context with multihashes
// loses or changes its values by then.
func TestLasting(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 1, MhsPerAd: 5, RemoveEvery: 3, UpdateEvery: 5},
		{Seed: 2, MhsPerAd: 6, MinMhsPerAd: 3, SharedMhs: 2, RemoveEvery: 4, UpdateEvery: 3, ReuseEvery: 7, PieceContextEvery: 5},
		{Seed: 3, MhsPerAd: 100, RemoveEvery: 10, UpdateEvery: 7},
	} {
		const horizon = 150
		ord, ad, ok, err := Lasting(cfg, horizon)
		if err != nil || !ok {
			t.Fatalf("%+v: Lasting = %v, %v", cfg, ok, err)
		}
		cfg.Ads = horizon
		c, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mh := multihash.Multihash(AppendMultihash(nil, cfg.Seed, ord))
		if vs := c.ModelAt(ad - 2).Values(mh); len(vs) != 0 {
			t.Fatalf("seed %d: multihash %d has values before its ad %d: %v", cfg.Seed, ord, ad, vs)
		}
		want := c.ModelAt(ad - 1).Values(mh)
		if len(want) != 1 {
			t.Fatalf("seed %d: ad %d gives multihash %d values %v, want one", cfg.Seed, ad, ord, want)
		}
		for i := ad - 1; i < horizon; i++ {
			if got := c.ModelAt(i).Values(mh); !slices.EqualFunc(got, want, sameValue) {
				t.Fatalf("seed %d: after ad %d multihash %d of ad %d has %v, want %v", cfg.Seed, i+1, ord, ad, got, want)
			}
		}
		// Earlier: Lasting picked the earliest, so every context made
		// before it was touched (its multihashes lost or changed values).
		touched := 0
		for _, o := range c.ops[:ad-1] {
			if o.kind != opPut {
				touched++
			}
		}
		if ad > 1 && touched == 0 {
			t.Errorf("seed %d: ad %d, but no ad before it touched a context: not the earliest", cfg.Seed, ad)
		}
		t.Logf("seed %d: multihash %d of ad %d lasts %d ads", cfg.Seed, ord, ad, horizon)
	}
}

func sameValue(a, b store.Value) bool {
	return a.ProviderID == b.ProviderID && string(a.ContextID) == string(b.ContextID) && string(a.Metadata) == string(b.Metadata)
}

// TestLastingNone: no multihash lasts when ads have none, or when the
// horizon is 0.
func TestLastingNone(t *testing.T) {
	for _, c := range []struct {
		cfg     Config
		horizon int
	}{
		{Config{Seed: 1, MhsPerAd: 0, RemoveEvery: 3}, 100},
		{Config{Seed: 1, MhsPerAd: 5}, 0},
	} {
		if _, _, ok, err := Lasting(c.cfg, c.horizon); ok || err != nil {
			t.Errorf("Lasting(%+v, %d) = %v, %v; want false, nil", c.cfg, c.horizon, ok, err)
		}
	}
	if _, _, _, err := Lasting(Config{RemoveEvery: -1}, 10); err == nil {
		t.Error("Lasting of an invalid config: no error")
	}
}
