// Manager tests run in testing/synctest bubbles: built without -race, as
// manager_test.go explains.

//go:build !race

package agent_test

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
	"github.com/indexkit/indexkit/lease/memory"
)

// feedSource is a memory store's Lister and Watcher that counts listings
// and can lose chosen changes, silently or followed by a Reset (as a feed
// that overflowed says).
type feedSource struct {
	s     *memory.Store
	lists atomic.Int64

	mu        sync.Mutex
	dropItem  string // drop the next change of this item
	thenReset bool   // and yield a Reset in its place
	dropped   int
}

func (f *feedSource) Rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	f.lists.Add(1)
	return f.s.Rows(ctx)
}

func (f *feedSource) drop(item string, thenReset bool) {
	f.mu.Lock()
	f.dropItem, f.thenReset = item, thenReset
	f.mu.Unlock()
}

func (f *feedSource) Watch(ctx context.Context) iter.Seq2[lease.Change, error] {
	return func(yield func(lease.Change, error) bool) {
		for c, err := range f.s.Watch(ctx) {
			f.mu.Lock()
			lose := err == nil && !c.Reset && c.Row.ID == f.dropItem
			reset := lose && f.thenReset
			if lose {
				f.dropItem = ""
				f.dropped++
			}
			f.mu.Unlock()
			if reset && !yield(lease.Change{Reset: true}, nil) {
				return
			}
			if !lose && !yield(c, err) {
				return
			}
		}
	}
}

// listerOnly hides a store's Watch: the manager scans by listing.
type listerOnly struct{ l lease.Lister }

func (o listerOnly) Rows(ctx context.Context) iter.Seq2[lease.Row, error] { return o.l.Rows(ctx) }

// A manager on a Watcher lists the catalog only at its start and at each
// reconciliation, however often it scans, and still wins every item.
func TestManagerFeedListsOnlyToReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		ids := putItems(t, s, 10, 10)
		src := &feedSource{s: s}
		n := start(t, s, "a", newIndexer(0), agent.WithItemSource(src),
			agent.WithScanInterval(time.Second), agent.WithReconcileInterval(time.Minute))
		time.Sleep(5*time.Minute + time.Second)
		checkOwned(t, s, ids, 1<<30, map[string]*node{"a": n})
		// ~300 scans; one listing at the start and one a minute after.
		if got := src.lists.Load(); got < 5 || got > 7 {
			t.Errorf("%d listings in 5 minutes of 1s scans with a 1m reconciliation, want 6 (±1)", got)
		}
		n.stop(t)
	})
}

// A Reset makes the manager list at once: a change the feed lost, and said
// so, is repaired before the next reconciliation.
func TestManagerFeedResetRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		putItems(t, s, 2, 10)
		src := &feedSource{s: s}
		n := start(t, s, "a", newIndexer(0), agent.WithItemSource(src), agent.WithReconcileInterval(time.Hour))
		time.Sleep(30 * time.Second)
		src.drop("late", true)
		if err := s.Put(context.Background(), lease.Item{ID: "late", Size: 10}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		if src.dropped != 1 {
			t.Fatalf("dropped %d changes, want 1", src.dropped)
		}
		if !holds(n, "late") {
			t.Errorf("30s after a Reset the manager holds %v, want late among them", n.m.Held())
		}
		n.stop(t)
	})
}

// A change the feed lost without a Reset is repaired by the periodic
// reconciliation, and not before.
func TestManagerFeedReconcileRepairs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		putItems(t, s, 2, 10)
		src := &feedSource{s: s}
		n := start(t, s, "a", newIndexer(0), agent.WithItemSource(src), agent.WithReconcileInterval(2*time.Minute))
		time.Sleep(10 * time.Second)
		src.drop("late", false)
		if err := s.Put(context.Background(), lease.Item{ID: "late", Size: 10}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if holds(n, "late") {
			t.Fatal("the manager won an item whose only change was dropped, before any listing: the test drops nothing")
		}
		time.Sleep(2 * time.Minute)
		if !holds(n, "late") {
			t.Errorf("after a reconciliation the manager holds %v, want late among them", n.m.Held())
		}
		n.stop(t)
	})
}

func holds(n *node, item string) bool {
	for _, ref := range n.m.Held() {
		if ref.Item == item {
			return true
		}
	}
	return false
}

// Ownership settles with several managers on the feed as it does with
// listing scans: every item held once, every node within its budget.
func TestManagerFeedSettles(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  func(s *memory.Store) lease.Lister
	}{
		{"feed", func(s *memory.Store) lease.Lister { return s }},
		{"scan", func(s *memory.Store) lease.Lister { return listerOnly{s} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newStore(t, lease.Hooks{})
				ids := putItems(t, s, 40, 100) // 4000 bytes among 5 × 1000
				const budget = 1000
				nodes := map[string]*node{}
				for _, name := range []string{"a", "b", "c", "d", "e"} {
					nodes[name] = start(t, s, name, newIndexer(time.Second), agent.WithBudget(budget),
						agent.WithItemSource(tc.src(s)))
				}
				time.Sleep(5 * time.Minute)
				checkOwned(t, s, ids, budget, nodes)
				for _, n := range nodes {
					n.stop(t)
				}
			})
		})
	}
}

// Changes on the feed bring scans forward: with an hour between scans,
// two managers claim twenty items within a minute. After the first
// scans, no tick comes: each bid comes from a kick (the node's own bid
// closed an auction, the feed shows the auction it bid in closed, or an
// auction open while it bids in none) or from the end of the window of
// the auction it bid in (10 s here). Without the kicks, only those
// windows would let them claim: a few items a minute.
func TestManagerFeedKicksScans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		ids := putItems(t, s, 20, 10)
		opts := []agent.Option{agent.WithScanInterval(time.Hour), agent.WithReconcileInterval(time.Hour)}
		a := start(t, s, "a", newIndexer(0), opts...)
		b := start(t, s, "b", newIndexer(0), opts...)
		time.Sleep(time.Minute)
		checkOwned(t, s, ids, 1<<30, map[string]*node{"a": a, "b": b})
		if len(a.m.Held()) == 0 || len(b.m.Held()) == 0 {
			t.Errorf("a holds %d, b %d: want both to have won", len(a.m.Held()), len(b.m.Held()))
		}
		a.stop(t)
		b.stop(t)
	})
}
