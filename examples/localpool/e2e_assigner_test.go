package localpool_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// The end-to-end fault tests of this package (e2e_*_test.go) start a whole
// pool, inflict one fault through the pool's role operations, and check
// through the front end against the publishers' ground truth. Every wait
// is bounded by the test's context (faultTimeout) and polls a condition;
// none sleeps for a fixed time.

// faultTimeout bounds each fault test, start to close.
const faultTimeout = 150 * time.Second

// startFaultPool starts cfg and closes the pool when the test ends; when
// the test failed it first logs the last lines of every role.
func startFaultPool(t *testing.T, cfg localpool.Config) (context.Context, *localpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	t.Cleanup(cancel)
	p, err := localpool.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range p.Roles() {
				t.Logf("%s:\n%s", r, lines(p.LogLines(r)))
			}
		}
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return ctx, p
}

// waitFor is p.WaitFor that fails the test.
func waitFor(t *testing.T, ctx context.Context, p *localpool.Pool, what string, cond func(*localpool.Snapshot) bool) *localpool.Snapshot {
	t.Helper()
	s, err := p.WaitFor(ctx, what, cond)
	if err != nil {
		if s != nil {
			t.Logf("last snapshot: indexers %+v\npublishers %+v\nhandoffs %+v", s.Indexers, s.Publishers, s.Handoffs)
		}
		t.Fatal(err)
	}
	return s
}

// honestAt reports whether every honest publisher of s serves n ads.
func honestAt(s *localpool.Snapshot, n int) bool {
	for _, ps := range s.Publishers {
		if ps.Fault == "" && ps.Ads != n {
			return false
		}
	}
	return true
}

// waitComplete is p.WaitComplete that fails the test.
func waitComplete(t *testing.T, ctx context.Context, p *localpool.Pool, what string) localpool.Check {
	t.Helper()
	c, err := p.WaitComplete(ctx)
	if err != nil {
		t.Fatalf("%s: %v; examples: %q", what, err, c.Examples)
	}
	return c
}

// TestE2EAssignerKilledMidHandoff: indexer-0 is frozen by its admin API
// while the publishers publish; at the assigner's handoff decision
// (msg=decision kind=handoff in its log) the assigner is SIGKILLed, so the
// handoff request may or may not have reached indexer-1. The assigner is
// started again (it persists nothing: it rebuilds its state from the
// indexers) and the handoff completes: every publisher of indexer-0 is
// held by indexer-1, continuing indexer-0, which ingests its new ads; no
// handoff is left pending; and once the publishers stop, the front end
// answers their whole truth, across the frozen and the active indexer.
func TestE2EAssignerKilledMidHandoff(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "pebble", Processes: true,
		Interval: 200 * time.Millisecond, Entries: 5, MaxAds: 50, PollInterval: 200 * time.Millisecond,
		Log: testLog{t}, LogLevel: 4,
	}
	ctx, p := startFaultPool(t, cfg)
	ix0, ix1 := localpool.IndexerName(0), localpool.IndexerName(1)
	s := waitFor(t, ctx, p, "every publisher assigned, indexer-0 ingesting one", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if len(ps.Owners) != 1 {
				return false
			}
		}
		st := s.Indexer(ix0)
		return st != nil && len(st.Publishers) > 0 && st.Publishers[0].AdsApplied > 0
	})
	var moved []string
	for _, h := range s.Indexer(ix0).Publishers {
		moved = append(moved, h.Publisher)
	}

	handoff, err := p.WatchLog(localpool.RoleAssigner, func(f map[string]string) bool {
		return f["msg"] == "decision" && f["kind"] == "handoff"
	})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := admin.NewClient(p.URLs().Indexers[0].Admin, admin.WithClientToken(p.AdminToken()))
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Freeze(ctx); err != nil {
		t.Fatalf("freeze indexer-0: %v", err)
	}
	select {
	case f := <-handoff:
		t.Logf("assigner decided a handoff (%v); SIGKILL", f)
	case <-ctx.Done():
		t.Fatal("no handoff decision in the assigner's log after indexer-0 froze")
	}
	if err := p.Kill(localpool.RoleAssigner); err != nil {
		t.Fatal(err)
	}
	headsAtKill := map[string]int{}
	if s, err := p.Snapshot(ctx); err == nil {
		for _, ps := range s.Publishers {
			headsAtKill[ps.ID] = ps.Ads
		}
	}
	if err := p.Start(ctx, localpool.RoleAssigner); err != nil {
		t.Fatal(err)
	}

	waitFor(t, ctx, p, "indexer-0's publishers continued on indexer-1", func(s *localpool.Snapshot) bool {
		if !s.AssignerUp || len(s.Pending()) > 0 || !s.Indexer(ix0).Frozen {
			return false
		}
		for _, id := range moved {
			i := slices.IndexFunc(s.Indexer(ix1).Publishers, func(h localpool.Held) bool { return h.Publisher == id })
			if i < 0 {
				return false
			}
			h := s.Indexer(ix1).Publishers[i]
			ps := s.Publishers[slices.IndexFunc(s.Publishers, func(ps localpool.PublisherState) bool { return ps.ID == id })]
			if h.Continued != ix0 || h.AdsApplied == 0 || !slices.Equal(ps.Owners, []string{ix1}) ||
				!slices.Equal(ps.Frozen, []string{ix0}) {
				return false
			}
		}
		return true
	})
	s = waitFor(t, ctx, p, "the publishers at 50 ads", func(s *localpool.Snapshot) bool { return honestAt(s, 50) })
	for _, id := range moved {
		if headsAtKill[id] >= 50 {
			t.Logf("publisher %s had published all its ads when the assigner was killed: the handoff resumed at the head", id)
		}
	}
	c := waitComplete(t, ctx, p, "after the handoff, with the publishers stopped")
	t.Logf("front end: %v", c)
	if c.Multihashes == 0 {
		t.Fatal("empty truth")
	}
	// Exactly one handoff per moved publisher is recorded, to indexer-1.
	done := 0
	for _, h := range s.Handoffs {
		if h.Done && h.From == ix0 && h.To == ix1 && slices.Contains(moved, h.Publisher) {
			done++
		}
	}
	if done != len(moved) {
		t.Fatalf("handoffs %+v: want one done from indexer-0 to indexer-1 per moved publisher (%d)", s.Handoffs, len(moved))
	}
}
