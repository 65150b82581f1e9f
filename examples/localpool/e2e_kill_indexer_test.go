package localpool_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// killAds is the chain length of each publisher in TestKillIndexer.
const killAds = 100

// TestKillIndexer kills an indexer with SIGKILL in the middle of
// ingestion, twice, and starts it again on the same data directory: the
// first time while its publishers keep publishing (with removals and
// metadata updates), the second time only after they have stopped, so
// that no announce comes after the restart. Once the publishers have
// stopped, the front end, and each indexer on its own, answer every
// multihash of the ground truth with exactly its values — nothing lost,
// stale, extra or duplicated.
func TestKillIndexer(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	if _, err := os.Executable(); err != nil {
		t.Fatalf("processes mode re-executes this test binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 3, Indexers: 2, Store: "pebble", Processes: true,
		Interval: 100 * time.Millisecond, Entries: 20, MaxAds: killAds, RemoveEvery: 5, UpdateEvery: 3,
		PollInterval: 200 * time.Millisecond,
		Log:          testLog{t}, LogLevel: 4,
	}
	p := convStart(ctx, t, cfg)

	// The victim: the indexer holding the most publishers, once it has
	// applied some of their ads.
	var victim string
	s, err := p.WaitFor(ctx, "every publisher assigned, 10 ads applied by its owner", func(s *localpool.Snapshot) bool {
		victim = ""
		most := 0
		for _, ix := range s.Indexers {
			for _, h := range ix.Publishers {
				if h.AdsApplied < 10 {
					return false
				}
			}
			if len(ix.Publishers) > most {
				victim, most = ix.Name, len(ix.Publishers)
			}
		}
		for _, ps := range s.Publishers {
			if len(ps.Owners) != 1 {
				return false
			}
		}
		return victim != ""
	})
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	killedAt := s.Publishers[0].Ads
	if killedAt >= killAds/3 {
		t.Fatalf("the publishers are at ad %d of %d before the first kill: ingestion is too slow for this test", killedAt, killAds)
	}
	convKill(t, p, victim, killedAt)

	// Down while its publishers publish a few ads, whose announces it
	// misses; started again while they publish.
	if _, err := p.WaitFor(ctx, "5 more ads", func(s *localpool.Snapshot) bool {
		return s.Publishers[0].Ads >= killedAt+5
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, victim); err != nil {
		t.Fatal(err)
	}

	// Killed again in the middle of ingestion, and down until the
	// publishers have stopped: no announce will come after its restart.
	s, err = p.WaitFor(ctx, "the victim walking again", func(s *localpool.Snapshot) bool {
		ix := s.Indexer(victim)
		return ix != nil && ix.Up && ix.Multihashes > 0 && s.Publishers[0].Ads < killAds
	})
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	convKill(t, p, victim, s.Publishers[0].Ads)
	if _, err := p.WaitFor(ctx, "the publishers stopped", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if ps.Ads != killAds {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx, victim); err != nil {
		t.Fatal(err)
	}
	s = convSettled(ctx, t, p, killAds)
	t.Logf("restarted %s after the publishers stopped at %d ads", victim, killAds)

	c, err := convWaitComplete(ctx, p)
	truth, terr := p.Truth(ctx)
	if terr != nil {
		t.Fatal(terr)
	}
	if err != nil {
		convExplain(ctx, t, p, truth)
		t.Fatal(err)
	}
	t.Logf("front end: %v", c)

	// Each indexer on its own: exactly its publishers' truth, once, and
	// none of the removed multihashes.
	checkGone(ctx, t, p, truth)
	held := map[string][]string{} // indexer → publisher IDs
	for _, ps := range s.Publishers {
		held[ps.Owners[0]] = append(held[ps.Owners[0]], ps.ID)
	}
	for _, ix := range p.Indexers() {
		var want, foreign []publishernode.Entry
		for _, e := range truth.Entries {
			if slices.Contains(held[ix], e.Values[0].ProviderID) {
				want = append(want, e)
			} else {
				foreign = append(foreign, e)
			}
		}
		if c := p.CheckIndexer(ctx, ix, want); !c.OK() {
			t.Errorf("%s on its publishers' %d multihashes: %v %v", ix, len(want), c, c.Examples)
		}
		if c := p.CheckIndexer(ctx, ix, foreign); c.Missing != c.Multihashes || c.Extra != 0 {
			t.Errorf("%s answers for publishers it does not hold: %v", ix, c)
		}
	}
}

// convKill kills name with SIGKILL.
func convKill(t *testing.T, p *localpool.Pool, name string, at int) {
	t.Helper()
	if err := p.Kill(name); err != nil {
		t.Fatal(err)
	}
	if p.Running(name) {
		t.Fatalf("%s still running after Kill", name)
	}
	t.Logf("killed %s (SIGKILL) at about ad %d of %d", name, at, killAds)
}
