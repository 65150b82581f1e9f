// Manager tests run in testing/synctest bubbles: built without -race, as
// manager_test.go explains.

//go:build !race

package agent_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// checkReplicated checks that every item has all its slots held, ready and
// by as many different nodes, and that no node holds two slots of an item.
func checkReplicated(t *testing.T, s lease.Store, items []string, copies int, nodes map[string]*node) {
	t.Helper()
	for name, n := range nodes {
		seen := map[string]string{}
		for _, ref := range n.m.Held() {
			item, _ := lease.SplitReplicaID(ref.Item)
			if other, dup := seen[item]; dup {
				t.Errorf("%s holds two slots of %s: %s and %s", name, item, other, ref.Item)
			}
			seen[item] = ref.Item
			if !n.idx.has(ref.Item) {
				t.Errorf("%s holds %s but has not indexed it", name, ref.Item)
			}
		}
	}
	for _, item := range items {
		rows, err := lease.Replicas(context.Background(), s, item, copies)
		if err != nil {
			t.Fatal(err)
		}
		owners := map[string]bool{}
		for _, r := range rows {
			if r.Owner == "" || !r.Ready || nodes[r.Owner] == nil {
				t.Errorf("%s: owner %q ready %v", r.ID, r.Owner, r.Ready)
			}
			owners[r.Owner] = true
		}
		if len(owners) != copies {
			t.Errorf("%s: %d copies on %d nodes", item, copies, len(owners))
		}
	}
}

// With replication 2 on 3 nodes, each item's two slots end on two
// different nodes. When a node crashes, every item stays readable from a
// ready copy throughout, and the slots it held are won again by the nodes
// that do not hold the item's other slot.
func TestManagerReplication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const copies = 2
		ctx := context.Background()
		s := newStore(t, lease.Hooks{})
		var items []string
		for i := range 6 {
			id := fmt.Sprintf("repo-%d", i)
			if err := lease.PutReplicated(ctx, s, lease.Item{ID: id, Size: 100}, copies); err != nil {
				t.Fatal(err)
			}
			items = append(items, id)
		}
		nodes := map[string]*node{}
		defer func() { // on failure too, or the bubble would deadlock
			for _, n := range nodes {
				n.stop(t)
			}
		}()
		for _, name := range []string{"a", "b", "c"} {
			var opts []agent.Option
			if name == "a" {
				opts = append(opts, agent.WithDrainTimeout(-1))
			}
			nodes[name] = start(t, s, name, newIndexer(2*time.Second), append(opts, agent.WithReplication())...)
		}
		time.Sleep(3 * time.Minute)
		checkReplicated(t, s, items, copies, nodes)

		fences := map[string]lease.Fence{} // a's slots
		for _, ref := range nodes["a"].m.Held() {
			fences[ref.Item] = ref.Fence
		}
		if len(fences) == 0 {
			t.Fatal("a holds no slot")
		}
		crashed := time.Now()
		nodes["a"].stop(t) // abandons its leases, as a crash would
		delete(nodes, "a")

		// Every second, every item has a ready copy; once a's leases have
		// lapsed, it is served by b or c.
		for time.Since(crashed) < 3*time.Minute {
			for _, item := range items {
				rows, err := lease.Replicas(ctx, s, item, copies)
				if err != nil {
					t.Fatal(err)
				}
				r, ok := lease.Serving(rows)
				switch {
				case !ok:
					t.Fatalf("%v after the crash: no ready copy of %s: %+v", time.Since(crashed), item, rows)
				case r.Owner == "a" && time.Since(crashed) > ttl:
					t.Fatalf("%v after the crash: %s served by the crashed node", time.Since(crashed), item)
				}
			}
			time.Sleep(time.Second)
		}
		checkReplicated(t, s, items, copies, nodes)
		for id, f := range fences {
			r, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Fence <= f {
				t.Errorf("%s: fence %d not above a's %d", id, r.Fence, f)
			}
		}
	})
}

// Without WithReplication, slot IDs are plain items: one node alone takes
// both slots of an item.
func TestManagerNoReplicationByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		if err := lease.PutReplicated(context.Background(), s, lease.Item{ID: "repo", Size: 10}, 2); err != nil {
			t.Fatal(err)
		}
		n := start(t, s, "a", newIndexer(0))
		time.Sleep(time.Minute)
		if got := len(n.m.Held()); got != 2 {
			t.Errorf("a holds %v, want both slots", n.m.Held())
		}
		n.stop(t)
	})
}

// A grant of a second slot of an item the node already holds (here won
// on its behalf from outside, as a grant that outlived a lost slot would
// be) is given back, not held.
func TestManagerReplicationRefusesSecondSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newStore(t, lease.Hooks{})
		if err := s.Put(ctx, lease.Item{ID: "repo", Size: 10}); err != nil {
			t.Fatal(err)
		}
		n := start(t, s, "a", newIndexer(0), agent.WithReplication())
		defer n.stop(t)
		time.Sleep(time.Minute)
		if held := n.m.Held(); len(held) != 1 || held[0].Item != "repo" {
			t.Fatalf("a holds %v, want [repo]", held)
		}
		if err := s.Put(ctx, lease.Item{ID: "repo#1", Size: 10, MaxBids: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if r, _ := s.Get(ctx, "repo#1"); r.Owner != "" || r.Round != 0 {
			t.Fatalf("a bid on the replica of an item it holds: %+v", r)
		}
		res, err := s.Bid(ctx, "repo#1", "a", 1000)
		if err != nil || res.Result == nil || res.Result.Grant == nil {
			t.Fatalf("Bid: %+v, %v", res, err)
		}
		time.Sleep(time.Minute)
		if held := n.m.Held(); len(held) != 1 || held[0].Item != "repo" {
			t.Errorf("a holds %v, want [repo]", held)
		}
		if r, _ := s.Get(ctx, "repo#1"); r.Owner != "" || r.Fence != res.Result.Grant.Fence {
			t.Errorf("repo#1 after the second-slot grant: owner %q fence %d", r.Owner, r.Fence)
		}
	})
}
