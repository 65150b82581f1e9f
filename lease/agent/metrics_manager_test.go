// Manager tests run in testing/synctest bubbles: built without -race, as
// manager_test.go explains.

//go:build !race

package agent_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// A Metrics connected to a store and a manager sees the manager's wins,
// indexing, renewals, eviction, releases, its held-lease and live-node
// gauges, and the losses of a crashed node.
func TestMetricsManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var met, crashed agent.Metrics
		s := newStore(t, met.StoreHooks())
		ids := putItems(t, s, 3, 100)
		idx := newIndexer(0)
		idx.sizes = map[string]int64{"big": 100} // the catalog says 0
		n := start(t, s, "a", idx, agent.WithBudget(350),
			agent.WithHooks(met.Hooks()))
		time.Sleep(time.Minute)
		checkOwned(t, s, ids, 350, map[string]*node{"a": n})
		got := met.Snapshot()
		if got.LeasesWon != 3 || got.Indexed != 3 || got.LeasesHeld != 3 || got.LiveNodes != 1 ||
			got.AuctionsWon != 3 || got.BidsPlaced < 3 || got.LeasesRenewed < 3 || got.EffectiveMaxBids != 1 {
			t.Errorf("after winning 3 items alone: %+v", got)
		}

		// A fourth item puts the node over budget: one eviction.
		if err := s.Put(t.Context(), lease.Item{ID: "big"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		got = met.Snapshot()
		if got.Evictions != 1 || got.EvictedBytes != 100 || got.LeasesReleased != 1 || got.LeasesHeld != 3 || got.LeasesWon != 4 {
			t.Errorf("after an eviction: %+v", got)
		}
		n.stop(t) // drains: releases the 3 held leases
		got = met.Snapshot()
		if got.LeasesHeld != 0 || got.LeasesReleased != 4 || got.LeasesLost != 0 {
			t.Errorf("after draining: %+v", got)
		}

		// A node that crashes loses its leases at their deadline.
		c := start(t, s, "c", newIndexer(0), agent.WithDrainTimeout(-1),
			agent.WithHooks(crashed.Hooks()))
		time.Sleep(time.Minute)
		held := len(c.m.Held())
		if held == 0 || crashed.Snapshot().LeasesHeld != held {
			t.Fatalf("crashing node holds %d, gauge %d", held, crashed.Snapshot().LeasesHeld)
		}
		c.stop(t)
		time.Sleep(ttl)
		if got := crashed.Snapshot(); got.LeasesLost != uint64(held) || got.LeasesReleased != 0 || got.LeasesHeld != 0 {
			t.Errorf("after a crash holding %d: %+v", held, got)
		}
	})
}
