package scatter

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

func TestGatherCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mh := func(s string) multihash.Multihash {
			m, _ := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
			return m
		}
		found := &gatherFake{results: []find.ProviderResult{gres("A", "c", "m")}}
		g, err := NewGather(gatherBackends(found), WithCache(2, 10*time.Second, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ask := func(key string, wantCalls int32, want ...string) {
			t.Helper()
			got, err := gatherCollect(t, g.Find(t.Context(), mh(key)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: results %q, want %q", key, got, want)
			}
			if c := found.calls.Load(); c != wantCalls {
				t.Errorf("%s: backend called %d times, want %d", key, c, wantCalls)
			}
		}
		ask("x", 1, "A/c=m")
		ask("x", 1, "A/c=m") // hit
		time.Sleep(10 * time.Second)
		ask("x", 2, "A/c=m") // expired

		// Negative entries expire sooner.
		found.results = nil
		ask("y", 3)
		time.Sleep(time.Second - time.Millisecond)
		ask("y", 3)
		time.Sleep(time.Millisecond)
		ask("y", 4)

		// Least recently used is evicted: x was used after y.
		found.results = []find.ProviderResult{gres("A", "c", "m")}
		ask("x", 4, "A/c=m")
		ask("z", 5, "A/c=m")
		ask("x", 5, "A/c=m")
		ask("y", 6, "A/c=m")

		// Partial answers and errors are not cached, nor an answer the
		// caller stopped reading.
		found.err = errGatherBoom
		for range 2 {
			got, err := gatherCollect(t, g.Find(t.Context(), mh("p")))
			if len(got) != 1 || !errors.Is(err, errGatherBoom) {
				t.Errorf("partial: %q, %v", got, err)
			}
		}
		found.err = nil
		for range g.Find(t.Context(), mh("q")) {
			break
		}
		ask("q", 10, "A/c=m")

		s := g.Stats()
		if s.CacheHits != 4 || s.CacheMisses != 10 || s.CacheEntries != 2 {
			t.Errorf("cache stats: %d hits, %d misses, %d entries; want 4, 10, 2", s.CacheHits, s.CacheMisses, s.CacheEntries)
		}
	})
}

// A cached partial "not found" would be the reference's false 404.
func TestGatherCacheNoPartialNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		empty, failing := &gatherFake{}, &gatherFake{err: errGatherBoom}
		g, err := NewGather(gatherBackends(empty, failing), WithCache(8, time.Minute, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, err := gatherCollect(t, g.Find(t.Context(), gatherMH))
			checkPartialErr(t, err, &find.PartialError{Answered: 1, Total: 2}, errGatherBoom)
		}
		if empty.calls.Load() != 2 || g.Stats().CacheEntries != 0 {
			t.Errorf("partial answer cached: %d calls, %d entries", empty.calls.Load(), g.Stats().CacheEntries)
		}
	})
}
