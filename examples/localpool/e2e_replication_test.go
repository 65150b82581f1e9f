package localpool_test

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestE2EReplicationIndexerDown: with replication 2 over 3 indexers every
// publisher is on two of them. indexer-1 is SIGKILLed while the
// publishers publish, and stays down while they publish more: every
// multihash of their truth, read after the kill, is answered in full by
// the front end (marked partial: a backend did not answer). The chains
// have no removals or updates here, so a truth read at one moment stays
// true while they publish on. Then indexer-1 starts again on its data and
// catches up at its publishers' next announces: at their last ad, its own
// find API answers their whole truth, and the front end all of it, no
// longer partial.
func TestE2EReplicationIndexerDown(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	const ads = 60
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 3, Indexers: 3, Replication: 2, Store: "pebble", Processes: true,
		Interval: 200 * time.Millisecond, Entries: 5, MaxAds: ads, RemoveEvery: -1, UpdateEvery: -1,
		PollInterval: 200 * time.Millisecond, Log: testLog{t}, LogLevel: 4,
	}
	ctx, p := startFaultPool(t, cfg)
	down := localpool.IndexerName(1)
	s := waitFor(t, ctx, p, "every publisher on two indexers", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if len(ps.Owners) != 2 {
				return false
			}
		}
		return true
	})
	var held []string // publishers indexer-1 holds
	for _, h := range s.Indexer(down).Publishers {
		held = append(held, h.Publisher)
	}
	if len(held) == 0 {
		t.Fatalf("indexer-1 holds no publisher: %+v", s.Indexers)
	}
	if err := p.Kill(down); err != nil {
		t.Fatal(err)
	}
	atKill := s.Publishers[0].Ads
	waitFor(t, ctx, p, "3 more ads published with indexer-1 down", func(s *localpool.Snapshot) bool {
		return s.Publishers[0].Ads >= min(ads, atKill+3) && !s.Indexer(down).Up
	})
	tr, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c localpool.Check
	for c = p.Check(ctx, tr.Entries); !c.OK(); c = p.Check(ctx, tr.Entries) {
		select {
		case <-ctx.Done():
			t.Fatalf("with indexer-1 down: %v; examples %q", c, c.Examples)
		case <-time.After(300 * time.Millisecond):
		}
	}
	if p.Running(down) {
		t.Fatal("indexer-1 runs again before the test started it")
	}
	if c.Partial == 0 {
		t.Errorf("check %v: no answer marked partial while indexer-1 was down", c)
	}
	t.Logf("with indexer-1 down: %v", c)

	if err := p.Start(ctx, down); err != nil {
		t.Fatal(err)
	}
	if s, err := p.Snapshot(ctx); err == nil && honestAt(s, ads) {
		// The publishers finished while indexer-1 was starting (a slow
		// machine): no announce is left to wake it, so sync it as an
		// operator would.
		t.Log("the publishers stopped before indexer-1 was up again: syncing it through its admin API")
		syncAll(t, p, down, held)
	}
	waitFor(t, ctx, p, "the publishers at their last ad", func(s *localpool.Snapshot) bool { return honestAt(s, ads) })
	tr, err = p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []publishernode.Entry // the truth of indexer-1's publishers
	for _, pt := range tr.Publishers {
		if slices.Contains(held, pt.Publisher) {
			mine = append(mine, pt.Entries...)
		}
	}
	var last localpool.Check
	for last = p.CheckIndexer(ctx, down, mine); !last.OK() || last.Multihashes == 0; last = p.CheckIndexer(ctx, down, mine) {
		select {
		case <-ctx.Done():
			t.Fatalf("indexer-1 did not catch up: %v; examples %q", last, last.Examples)
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Logf("indexer-1 after its restart, its publishers' truth: %v", last)
	// The front end may still skip indexer-1 for a moment (its circuit
	// breaker closes after a successful probe), so answers may be marked
	// partial for a while; they must stop being so.
	c = waitComplete(t, ctx, p, "with every indexer up again")
	for c.Partial != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("check %v: answers still partial with every indexer up; examples %q", c, c.Examples)
		case <-time.After(500 * time.Millisecond):
		}
		c = p.Check(ctx, tr.Entries)
	}
	if !c.OK() {
		t.Errorf("with every indexer up, not partial: %v; examples %q", c, c.Examples)
	}
}

// syncAll asks indexer name to sync each publisher of ids from its
// address (POST /ingest/sync/{id} through the admin API).
func syncAll(t *testing.T, p *localpool.Pool, name string, ids []string) {
	t.Helper()
	urls := p.URLs()
	var adminURL string
	for _, ix := range urls.Indexers {
		if ix.Name == name {
			adminURL = ix.Admin
		}
	}
	c, err := admin.NewClient(adminURL, admin.WithClientToken(p.AdminToken()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, ps := range s.Publishers {
		if !slices.Contains(ids, ps.ID) || i >= len(urls.Publishers) {
			continue
		}
		u, err := url.Parse(urls.Publishers[i])
		if err != nil {
			t.Fatal(err)
		}
		addr, err := multiaddr.NewMultiaddr("/ip4/" + u.Hostname() + "/tcp/" + u.Port() + "/http")
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.Decode(ps.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(t.Context(), id, admin.SyncRequest{Addr: addr}); err != nil {
			t.Fatalf("sync %s on %s: %v", ps.Name, name, err)
		}
	}
}
