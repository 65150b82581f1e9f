// Built without -race for the reason given in manager_test.go.

//go:build !race

package agent_test

import (
	"context"
	"errors"
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

// commitIndexer is an agent.Indexer that records every Index call's
// commit and serves, per item, the commit it last built; a new build
// replaces the old one only when it succeeds, as the Indexer contract asks.
type commitIndexer struct {
	delay time.Duration
	mu    sync.Mutex
	calls []string          // item@commit of each Index call
	built map[string]string // item → commit served
	drops []string
}

func (x *commitIndexer) Index(ctx context.Context, r lease.Row) (int64, error) {
	x.mu.Lock()
	x.calls = append(x.calls, r.ID+"@"+r.Commit)
	x.mu.Unlock()
	t := time.NewTimer(x.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	x.mu.Lock()
	x.built[r.ID] = r.Commit
	x.mu.Unlock()
	return r.Size, nil
}

func (x *commitIndexer) Drop(item string) {
	x.mu.Lock()
	delete(x.built, item)
	x.drops = append(x.drops, item)
	x.mu.Unlock()
}

func (x *commitIndexer) state() (calls []string, built map[string]string, drops []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	b := map[string]string{}
	for k, v := range x.built {
		b[k] = v
	}
	return append([]string(nil), x.calls...), b, append([]string(nil), x.drops...)
}

func startWith(t *testing.T, s lease.Store, name string, idx agent.Indexer, opts ...agent.Option) (*agent.Manager, func()) {
	t.Helper()
	m, err := agent.NewManager(s, name, append([]agent.Option{agent.WithIndexer(idx),
		agent.WithHeartbeatInterval(5 * time.Second), agent.WithTTL(ttl)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	// Also after a t.Fatal: a Manager left running when the test function
	// returns makes synctest panic with "deadlock", hiding the failure.
	t.Cleanup(stop)
	return m, stop
}

// signal sends on ch, a channel of capacity 1, without blocking: hooks
// must not block, and a waiter needs only the first event.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// await waits, in the bubble's time, at most d for an event on ch, then
// for every other goroutine of the bubble to block (synctest.Wait), so that
// the manager has done what the event started (a hook runs before the
// state it reports is recorded).
func await(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
	}
	synctest.Wait()
}

// A held item whose catalog commit changes is indexed again at the new
// commit under the same lease; the old index serves (the row stays Ready)
// until the new one replaces it.
func TestManagerReindexOnCommitChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newStore(t, lease.Hooks{})
		if err := s.Put(ctx, lease.Item{ID: "a", Commit: "c1", Size: 100}); err != nil {
			t.Fatal(err)
		}
		x := &commitIndexer{delay: 5 * time.Second, built: map[string]string{}}
		var indexed atomic.Int32
		m, stop := startWith(t, s, "n", x, agent.WithHooks(agent.Hooks{
			Indexed: func(lease.Ref, int64, error) { indexed.Add(1) }}))
		time.Sleep(30 * time.Second)
		r1, _ := s.Get(ctx, "a")
		if _, built, _ := x.state(); r1.Owner != "n" || !r1.Ready || built["a"] != "c1" {
			t.Fatalf("before the change: row %+v, built %v", r1, built)
		}
		if err := s.Put(ctx, lease.Item{ID: "a", Commit: "c2", Size: 100}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // a scan has seen c2; Index(c2) is running
		calls, built, _ := x.state()
		r, _ := s.Get(ctx, "a")
		if len(calls) != 2 || calls[1] != "a@c2" || built["a"] != "c1" || !r.Ready {
			t.Fatalf("while reindexing: calls %v, serving %v, row ready %v; want a@c2 running, c1 served, ready", calls, built, r.Ready)
		}
		time.Sleep(10 * time.Second)
		calls, built, drops := x.state()
		r2, _ := s.Get(ctx, "a")
		if len(calls) != 2 || built["a"] != "c2" || len(drops) != 0 {
			t.Fatalf("after reindexing: calls %v, serving %v, drops %v; want 2 calls, c2 served, no drop", calls, built, drops)
		}
		if r2.Owner != "n" || r2.Fence != r1.Fence || !r2.Ready || !r2.LastIndexed.After(r1.LastIndexed) {
			t.Fatalf("after reindexing: row %+v; want the same grant (fence %d), ready, indexed after %v", r2, r1.Fence, r1.LastIndexed)
		}
		if got := indexed.Load(); got != 2 {
			t.Errorf("Indexed hook called %d times, want 2", got)
		}
		if len(m.Held()) != 1 {
			t.Errorf("held %v", m.Held())
		}
		stop()
	})
}

// partitionable is a memory store whose renewals can be made to fail, as
// they would while the node cannot reach the catalog.
type partitionable struct {
	*memory.Store
	cut atomic.Bool
}

var errCut = errors.New("partitioned")

func (p *partitionable) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.Store.Renew(ctx, refs...)
}

// A node that loses an item (renewals cut off past its deadline) and wins
// it back keeps the index it had: no second Index call at the same commit,
// a new one at another commit; with keeping off, Index runs again. A kept
// index counts in Used.
func TestManagerReusesKeptIndex(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []agent.Option
		newCommit  bool
		wantCalls  int
		wantReused int32
	}{
		{"same commit", nil, false, 1, 1},
		{"new commit", nil, true, 2, 0},
		{"keeping off", []agent.Option{agent.WithKeepLost(0)}, false, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				p := &partitionable{Store: newStore(t, lease.Hooks{})}
				if err := p.Put(ctx, lease.Item{ID: "a", Commit: "c1", Size: 100}); err != nil {
					t.Fatal(err)
				}
				x := &commitIndexer{delay: time.Second, built: map[string]string{}}
				var reused, lost atomic.Int32
				m, stop := startWith(t, p, "n", x, append([]agent.Option{agent.WithHooks(agent.Hooks{
					Reused: func(lease.Ref, int64) { reused.Add(1) },
					Lease: lease.HolderHooks{LeaseLost: func(ref lease.Ref, err error) {
						if !errors.Is(err, lease.ErrReleased) {
							lost.Add(1)
						}
					}},
				})}, tc.opts...)...)
				// Renewal rounds come at 0 s, 10 s, 20 s, ... from Run's
				// start. Cut at 25 s, between two rounds, so that the last
				// renewal is the one at 20 s whatever the order of events
				// at an instant: the lease is lost at 47 s (TTL less the
				// 3 s margin) and lapses in the store at 50 s.
				time.Sleep(25 * time.Second)
				r1, _ := p.Get(ctx, "a")
				if !r1.Ready || r1.Owner != "n" {
					t.Fatalf("not ready: %+v", r1)
				}
				p.cut.Store(true)
				// To 55 s: past the local deadline, and past the store's
				// expiry, so that the node cannot take the old grant up
				// again once the cut ends (it must win a new one).
				time.Sleep(ttl)
				if lost.Load() < 1 || len(m.Held()) != 0 {
					t.Fatalf("after the cut: %d leases lost, held %v", lost.Load(), m.Held())
				}
				if _, built, _ := x.state(); tc.wantReused > 0 && (built["a"] != "c1" || m.Used() != 100) {
					t.Fatalf("lost item: indexer serves %v, Used %d; want the index kept and counted (100)", built, m.Used())
				}
				if tc.newCommit {
					if err := p.Put(ctx, lease.Item{ID: "a", Commit: "c2", Size: 100}); err != nil {
						t.Fatal(err)
					}
				}
				p.cut.Store(false)
				time.Sleep(time.Minute) // the store's lease lapses; the node wins it again
				r2, _ := p.Get(ctx, "a")
				calls, built, _ := x.state()
				if r2.Owner != "n" || !r2.Ready || r2.Fence <= r1.Fence {
					t.Fatalf("not won back: %+v", r2)
				}
				if len(calls) != tc.wantCalls || reused.Load() != tc.wantReused || built["a"] != r2.Commit {
					t.Errorf("Index calls %v (want %d), reused %d (want %d), serving %v at row commit %s",
						calls, tc.wantCalls, reused.Load(), tc.wantReused, built, r2.Commit)
				}
				if u := m.Used(); u != 100 {
					t.Errorf("Used %d after winning back, want 100", u)
				}
				stop()
				if _, built, _ := x.state(); len(built) != 0 {
					t.Errorf("after Run: indexer still serves %v", built)
				}
			})
		})
	}
}

// A kept index is dropped after WithKeepLost, and Used drops with it.
func TestManagerKeptIndexExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := &partitionable{Store: newStore(t, lease.Hooks{})}
		if err := p.Put(ctx, lease.Item{ID: "a", Commit: "c1", Size: 100}); err != nil {
			t.Fatal(err)
		}
		x := &commitIndexer{delay: time.Second, built: map[string]string{}}
		indexed, lost := make(chan struct{}, 1), make(chan struct{}, 1)
		// Scans an hour apart, so that the node does not win the item back
		// once its lease lapses in the store.
		m, stop := startWith(t, p, "n", x, agent.WithKeepLost(20*time.Second), agent.WithScanInterval(time.Hour),
			agent.WithHooks(agent.Hooks{
				Indexed: func(_ lease.Ref, _ int64, err error) {
					if err == nil {
						signal(indexed)
					}
				},
				Lease: lease.HolderHooks{LeaseLost: func(_ lease.Ref, err error) {
					if !errors.Is(err, lease.ErrReleased) {
						signal(lost)
					}
				}},
			}))
		// Run heartbeats and scans at once. The first scan's bid closes the
		// auction at once only if the first heartbeat reached the store
		// before it (the store counts live nodes for the threshold); else
		// the auction closes at the next scan, up to 90 minutes later.
		// Either way, wait for the index rather than a fixed time.
		await(t, indexed, 2*time.Hour, "index of a")
		p.cut.Store(true)
		// The lease is lost at the deadline of its last renewal, at most
		// TTL − margin after the cut.
		await(t, lost, ttl, "loss of the lease on a")
		if _, built, _ := x.state(); built["a"] != "c1" || m.Used() != 100 {
			t.Fatalf("right after the loss: serving %v, Used %d; want c1 kept and counted (100)", built, m.Used())
		}
		// Kept indexes are dropped by the renewal rounds, every TTL/3
		// (10 s): the first round at least WithKeepLost (20 s) after the
		// loss drops it, at most 30 s after the loss.
		time.Sleep(40 * time.Second)
		if _, built, _ := x.state(); len(built) != 0 || m.Used() != 0 {
			t.Errorf("after the keep time: serving %v, Used %d; want dropped", built, m.Used())
		}
		stop()
	})
}

// Items too large for the budget (Size or MinBid) are reported once each,
// listed by Starved, and forgotten once they fit.
func TestManagerReportsStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newStore(t, lease.Hooks{})
		for _, it := range []lease.Item{{ID: "big", Size: 5000}, {ID: "picky", Size: 10, MinBid: 4000}, {ID: "ok", Size: 100}} {
			if err := s.Put(ctx, it); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		reports := map[string]int{}
		var met agent.Metrics
		mh := met.Hooks()
		mh.Starved = func(item string, need int64) {
			mu.Lock()
			reports[item]++
			mu.Unlock()
			met.Hooks().Starved(item, need)
		}
		m, stop := startWith(t, s, "n", newIndexer(0), agent.WithBudget(1000), agent.WithHooks(mh))
		time.Sleep(time.Minute) // about 60 scans
		got := m.Starved()
		want := []agent.StarvedItem{{Item: "big", Need: 5000}, {Item: "picky", Need: 4000}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("Starved() = %v, want %v", got, want)
		}
		mu.Lock()
		if reports["big"] != 1 || reports["picky"] != 1 || len(reports) != 2 {
			t.Errorf("Starved hook calls %v, want big and picky once each", reports)
		}
		mu.Unlock()
		if n := met.Snapshot().ItemsTooLarge; n != 2 {
			t.Errorf("ItemsTooLarge %d, want 2", n)
		}
		if err := s.Put(ctx, lease.Item{ID: "big", Size: 500}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if got := m.Starved(); len(got) != 1 || got[0].Item != "picky" {
			t.Errorf("after big shrank: Starved() = %v, want picky only", got)
		}
		if r, _ := s.Get(ctx, "big"); r.Owner != "n" {
			t.Errorf("big, now fitting, owned by %q", r.Owner)
		}
		stop()
	})
}

// recordingLister lists the store's rows and records when each scan
// asked.
type recordingLister struct {
	lease.Lister
	mu sync.Mutex
	at []time.Time
}

func (l *recordingLister) Rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	l.mu.Lock()
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
	return l.Lister.Rows(ctx)
}

// Scans are jittered: each wait is in [d/2, 3d/2), and they differ.
func TestManagerScanJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, lease.Hooks{})
		src := &recordingLister{Lister: s}
		const d = time.Second
		_, stop := startWith(t, s, "n", newIndexer(0), agent.WithItemSource(src), agent.WithScanInterval(d))
		time.Sleep(40 * d)
		stop()
		src.mu.Lock()
		defer src.mu.Unlock()
		if len(src.at) < 20 {
			t.Fatalf("%d scans in %v", len(src.at), 40*d)
		}
		seen := map[time.Duration]bool{}
		for i := 1; i < len(src.at); i++ {
			gap := src.at[i].Sub(src.at[i-1])
			if gap < d/2 || gap >= 3*d/2 {
				t.Errorf("scan %d came %v after the previous; want in [%v, %v)", i, gap, d/2, 3*d/2)
			}
			seen[gap] = true
		}
		if len(seen) < len(src.at)/2 {
			t.Errorf("%d distinct waits among %d scans: not jittered", len(seen), len(src.at)-1)
		}
	})
}
