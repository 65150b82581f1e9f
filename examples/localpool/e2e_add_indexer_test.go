package localpool_test

import (
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestE2EAddIndexer: a pool of 2 indexers holds 2 publishers, one each.
// A third indexer is added as the seed says an operator does it (a new
// node, then the assigner restarted with it in its configuration, and the
// front end with it among its backends: localpool.AddIndexer). A publisher
// that appears afterwards (localpool.AddPublishers) is assigned to the new,
// empty indexer, which the assigner prefers as the least loaded (fewest
// publishers); the old publishers stay where they were; the front end
// answers the new publisher's multihashes, from the new indexer, and the
// whole truth in full.
func TestE2EAddIndexer(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	const ads = 8
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "memory",
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: ads, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 4,
	}
	ctx, p := startFaultPool(t, cfg)
	before := waitFor(t, ctx, p, "both publishers assigned, one per indexer", func(s *localpool.Snapshot) bool {
		for _, ix := range s.Indexers {
			if len(ix.Publishers) != 1 {
				return false
			}
		}
		return true
	})
	owners := map[string][]string{}
	for _, ps := range before.Publishers {
		owners[ps.ID] = ps.Owners
	}

	added, err := p.AddIndexer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if added != localpool.IndexerName(2) {
		t.Fatalf("AddIndexer: %q, want indexer-2", added)
	}
	role, err := p.AddPublishers(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if role != localpool.PublishersName(1) {
		t.Fatalf("AddPublishers: role %q, want %q", role, localpool.PublishersName(1))
	}
	s := waitFor(t, ctx, p, "the new publisher on indexer-2, every publisher at its last ad", func(s *localpool.Snapshot) bool {
		return len(s.Publishers) == 3 && s.Publishers[2].Name == "publisher-2" &&
			slices.Equal(s.Publishers[2].Owners, []string{added}) && honestAt(s, ads)
	})
	newID := s.Publishers[2].ID
	for _, ps := range s.Publishers[:2] {
		if !slices.Equal(ps.Owners, owners[ps.ID]) {
			t.Errorf("publisher %s moved from %v to %v", ps.Name, owners[ps.ID], ps.Owners)
		}
	}
	if h := s.Indexer(added).Publishers; len(h) != 1 || h[0].Publisher != newID {
		t.Fatalf("indexer-2 holds %+v, want only the new publisher %s", h, newID)
	}

	c := waitComplete(t, ctx, p, "with the new indexer and publisher")
	tr, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fresh []publishernode.Entry
	for _, pt := range tr.Publishers {
		if pt.Publisher == newID {
			fresh = pt.Entries
		}
	}
	if len(fresh) == 0 {
		t.Fatalf("no truth of the new publisher in %d publishers' truth", len(tr.Publishers))
	}
	if ci := p.CheckIndexer(ctx, added, fresh); !ci.OK() {
		t.Fatalf("indexer-2's own answers for the new publisher: %v %q", ci, ci.Examples)
	}
	if c.Multihashes < len(fresh) {
		t.Fatalf("front end check %v covers less than the new publisher's %d multihashes", c, len(fresh))
	}
	t.Logf("front end: %v (new publisher: %d multihashes, on indexer-2)", c, len(fresh))
}
