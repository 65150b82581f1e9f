package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// RunWatch runs the conformance suite of [lease.Watcher] on real time,
// every duration in multiples of unit (as [RunRealTime]; 10ms suits an
// in-memory store, 50ms a local server). The factory's stores must
// implement lease.Watcher and lease.Lister. It checks that a feed yields a
// Reset first; that every write the Watcher documentation lists (Put, a
// Bid that opens or joins an auction, an evaluation that closes one with
// or without a winner, a short-circuiting Bid, Update, Release) appears
// with the row Get returns after it, in order, each Row [lease.Row.Newer]
// than the one before; that a consumer which applies the feed, and lists
// every row at each Reset, ends up with the store's rows after concurrent
// writers and after a burst of 12,000 writes it did not read in time (so a
// backend that drops changes for a slow consumer must say so with a
// Reset); that a consumer that stops does not block writers; and that
// Close ends a Watch with an error wrapping lease.ErrClosed.
func RunWatch(t *testing.T, newStore Factory, unit time.Duration) {
	s := &suite{newStore: newStore, u: unit, real: true}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"ResetFirst", testWatchResetFirst},
		{"EveryWrite", testWatchEveryWrite},
		{"Converges", testWatchConverges},
		{"SlowConsumer", testWatchSlowConsumer},
		{"Closed", testWatchClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) })
	}
}

func watcherOf(t *testing.T, e *env) lease.Watcher {
	t.Helper()
	w, ok := e.s.(lease.Watcher)
	if !ok {
		t.Fatalf("%T does not implement lease.Watcher", e.s)
	}
	return w
}

// feed runs a Watch on its own goroutine and hands its changes over a
// channel; stop ends it and waits for it.
type feed struct {
	ch     chan change
	cancel context.CancelFunc
	done   chan struct{}
}

type change struct {
	c   lease.Change
	err error
}

func startFeed(t *testing.T, w lease.Watcher) *feed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &feed{ch: make(chan change, 1<<16), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for c, err := range w.Watch(ctx) {
			select {
			case f.ch <- change{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *feed) stop() {
	f.cancel()
	<-f.done
}

// next returns the feed's next change, failing the test after d.
func (f *feed) next(t *testing.T, d time.Duration) change {
	t.Helper()
	select {
	case c := <-f.ch:
		return c
	case <-time.After(d):
		t.Fatalf("no change from the feed within %v", d)
		return change{}
	}
}

// sameState reports whether two rows of an item say the same thing, but
// for the lease's expiry, which renewals move unreported.
func sameState(a, b lease.Row) bool {
	return a.Item == b.Item && a.Owner == b.Owner && a.Fence == b.Fence && a.State == b.State &&
		a.Version == b.Version && a.Ready == b.Ready && a.Round == b.Round && a.Bids == b.Bids &&
		a.Unleased == b.Unleased && a.AuctionDeadline.IsZero() == b.AuctionDeadline.IsZero() &&
		a.LastIndexed.Equal(b.LastIndexed)
}

func testWatchResetFirst(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	w := watcherOf(t, e)
	f := startFeed(t, w)
	if c := f.next(t, 50*e.u); c.err != nil || !c.c.Reset {
		t.Fatalf("first change %+v (err %v), want a Reset", c.c, c.err)
	}
	// A consumer that stops at once blocks no writer.
	for range w.Watch(e.ctx) {
		break
	}
	for i := range 100 {
		e.put(lease.Item{ID: "a", Commit: fmt.Sprint(i)})
	}
}

func testWatchEveryWrite(t *testing.T, s *suite) {
	e := s.open(t, lease.WithTTL(1000*s.u))
	f := startFeed(t, watcherOf(t, e))
	if c := f.next(t, 50*e.u); !c.c.Reset {
		t.Fatalf("first change %+v, want a Reset", c.c)
	}
	last := map[string]lease.Row{}
	// expect reads the feed until it shows the row Get returns for id,
	// checking that each change of an item is Newer than the one before.
	expect := func(op, id string) {
		t.Helper()
		want := e.get(id)
		deadline := time.Now().Add(100 * e.u)
		for {
			c := f.next(t, time.Until(deadline))
			if c.err != nil || c.c.Reset {
				t.Fatalf("after %s: change %+v, err %v; want rows only", op, c.c, c.err)
			}
			r := c.c.Row
			if prev, ok := last[r.ID]; ok && !r.Newer(prev) {
				t.Fatalf("after %s: change %+v is not Newer than the previous change %+v", op, r, prev)
			}
			last[r.ID] = r
			if r.ID == id && sameState(r, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: feed never showed %+v; last change %+v", op, want, r)
			}
		}
	}
	e.put(lease.Item{ID: "a", Commit: "c1"})
	expect("Put (new)", "a")
	e.put(lease.Item{ID: "b", Commit: "c1"})
	expect("Put (another item)", "b")
	e.put(lease.Item{ID: "a", Commit: "c2"})
	expect("Put (catalog change)", "a")
	e.bid("a", "n1", 100)
	expect("Bid (opens)", "a")
	e.bid("a", "n2", 50)
	expect("Bid (joins)", "a")
	e.put(lease.Item{ID: "a", Commit: "c2", MinBid: 1000}) // no bid is eligible now
	expect("Put (during the auction)", "a")
	e.advance(windowU + 1)
	if r := e.evaluate("a"); r.Outcome != lease.NoWinner {
		t.Fatalf("Evaluate after the window: %v, want no winner", r.Outcome)
	}
	expect("Evaluate (no winner)", "a")
	e.put(lease.Item{ID: "a", Commit: "c2"})
	expect("Put", "a")
	e.bid("a", "n1", 100)
	expect("Bid (opens the second auction)", "a")
	e.advance(windowU + 1)
	r := e.evaluate("a")
	g := wantGrant(t, &r, "n1")
	expect("Evaluate (granted)", "a")
	e.renew(g.Ref)
	ready := true
	if _, err := e.s.Update(e.ctx, g.Ref, lease.Mutation{Ready: &ready}); err != nil {
		t.Fatal(err)
	}
	expect("Update (ready)", "a")
	e.put(lease.Item{ID: "a", Commit: "c3"})
	expect("Put (while held)", "a")
	if _, err := e.s.Update(e.ctx, g.Ref, lease.Mutation{Draining: true}); err != nil {
		t.Fatal(err)
	}
	expect("Update (draining)", "a")
	if err := e.s.Release(e.ctx, g.Ref); err != nil {
		t.Fatal(err)
	}
	expect("Release", "a")
	e.put(lease.Item{ID: "a", Commit: "c3", MaxBids: 1})
	expect("Put (max bids 1)", "a")
	e.bid("a", "n2", 100) // short-circuits
	expect("Bid (short circuit)", "a")
}

// view is a consumer's picture of the catalog, fed by a Watch and by a
// full listing at each Reset; it checks the order of each item's changes
// between Resets.
type view struct {
	t    *testing.T
	l    lease.Lister
	mu   sync.Mutex
	rows map[string]lease.Row
	prev map[string]lease.Row // last change of each item since the last Reset
	errs []string
	n    int // rows applied
	rs   int // Resets
}

func (v *view) apply(ctx context.Context, c lease.Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c.Reset {
		v.rs++
		v.prev = map[string]lease.Row{}
		for r, err := range v.l.Rows(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					v.errs = append(v.errs, fmt.Sprintf("Rows after a Reset: %v", err))
				}
				return
			}
			v.merge(r)
		}
		return
	}
	r := c.Row
	if p, ok := v.prev[r.ID]; ok && !r.Newer(p) && !sameState(r, p) {
		v.errs = append(v.errs, fmt.Sprintf("%s: change %+v after the later %+v", r.ID, r, p))
	}
	v.prev[r.ID] = r
	v.n++
	v.merge(r)
}

func (v *view) merge(r lease.Row) {
	if old, ok := v.rows[r.ID]; !ok || r.Newer(old) {
		v.rows[r.ID] = r
	}
}

// consume runs a view over w until ctx ends; gate, when not nil, holds the
// consumer before each change while it is locked.
func consume(ctx context.Context, t *testing.T, w lease.Watcher, l lease.Lister, gate *sync.RWMutex) (*view, func()) {
	v := &view{t: t, l: l, rows: map[string]lease.Row{}, prev: map[string]lease.Row{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c, err := range w.Watch(ctx) {
			if err != nil {
				v.mu.Lock()
				v.errs = append(v.errs, fmt.Sprintf("Watch: %v", err))
				v.mu.Unlock()
				return
			}
			if gate != nil {
				gate.RLock()
				gate.RUnlock()
			}
			v.apply(ctx, c)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return v, stop
}

// converge polls until the view holds every row as Get reads it.
func (v *view) converge(t *testing.T, e *env, ids []string) {
	t.Helper()
	deadline := time.Now().Add(400 * e.u)
	for {
		var diff string
		v.mu.Lock()
		for _, id := range ids {
			want := e.get(id)
			if got, ok := v.rows[id]; !ok || !sameState(got, want) {
				diff = fmt.Sprintf("%s: view %+v, store %+v", id, got, want)
				break
			}
		}
		errs := v.errs
		v.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("consumer: %v", errs)
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the view did not converge: %s", diff)
		}
		time.Sleep(e.u / 5)
	}
}

func listerOf(t *testing.T, e *env) lease.Lister {
	t.Helper()
	l, ok := e.s.(lease.Lister)
	if !ok {
		t.Fatalf("%T does not implement lease.Lister, which a Watch consumer needs at each Reset", e.s)
	}
	return l
}

// testWatchConverges runs writers that bid, evaluate, update, release and
// put at random on 8 items while a consumer keeps a view, and requires
// the view to end up equal to the store.
func testWatchConverges(t *testing.T, s *suite) {
	e := s.open(t, lease.WithTTL(1000*s.u), lease.WithMaxBids(2))
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("w%d", i)
		ids = append(ids, id)
		e.put(lease.Item{ID: id})
	}
	v, _ := consume(e.ctx, t, watcherOf(t, e), listerOf(t, e), nil)
	var wg sync.WaitGroup
	for n := range 6 {
		node := fmt.Sprintf("n%d", n)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			var mine []lease.Ref
			for range 150 {
				id := ids[rng.IntN(len(ids))]
				switch k := rng.IntN(10); {
				case k < 4:
					res, err := e.s.Bid(e.ctx, id, node, rng.Int64N(1000))
					if err == nil && res.Result != nil && res.Result.Grant != nil && res.Result.Grant.Holder == node {
						mine = append(mine, res.Result.Grant.Ref)
					}
				case k < 5:
					res, err := e.s.Evaluate(e.ctx, id)
					if err == nil && res.Grant != nil && res.Grant.Holder == node {
						mine = append(mine, res.Grant.Ref)
					}
				case k < 6:
					_ = e.s.Put(e.ctx, lease.Item{ID: id, Commit: fmt.Sprint(rng.IntN(5))})
				case len(mine) > 0 && k < 8:
					ready := rng.IntN(2) == 0
					_, _ = e.s.Update(e.ctx, mine[rng.IntN(len(mine))], lease.Mutation{Ready: &ready})
				case len(mine) > 0:
					i := rng.IntN(len(mine))
					_ = e.s.Release(e.ctx, mine[i])
					mine = append(mine[:i], mine[i+1:]...)
				}
			}
		})
	}
	wg.Wait()
	v.converge(t, e, ids)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n == 0 {
		t.Fatal("the consumer applied no change")
	}
}

// testWatchSlowConsumer holds the consumer while a new item is put and
// holders make 12,000 owner updates, more than a bounded feed keeps, then
// lets it go: it must catch up (with a Reset and a listing if changes were
// dropped), and the writers must not have waited for it.
func testWatchSlowConsumer(t *testing.T, s *suite) {
	e := s.open(t, lease.WithTTL(1000*s.u))
	const items, updates = 4, 3000
	var ids []string
	refs := make([]lease.Ref, items)
	for i := range items {
		id := fmt.Sprintf("s%d", i)
		ids = append(ids, id)
		e.put(lease.Item{ID: id})
		refs[i] = e.grant(id, fmt.Sprintf("n%d", i))
	}
	var gate sync.RWMutex
	v, _ := consume(e.ctx, t, watcherOf(t, e), listerOf(t, e), &gate)
	// Let the first Reset through, then hold the consumer.
	deadline := time.Now().Add(100 * e.u)
	for {
		v.mu.Lock()
		rs := v.rs
		v.mu.Unlock()
		if rs > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no Reset from the feed")
		}
		time.Sleep(e.u / 5)
	}
	gate.Lock()
	// An item whose only change comes early: a feed that drops the oldest
	// changes without a Reset loses it for good. It comes after a few
	// updates, since a reader may have taken the first change from its
	// backend before the consumer stopped.
	for range 100 {
		e.put(lease.Item{ID: "s0", MaxBids: 1})
	}
	e.put(lease.Item{ID: "s-new"})
	ids = append(ids, "s-new")
	var wg sync.WaitGroup
	errc := make(chan error, items)
	for i := range items {
		wg.Go(func() {
			for j := range updates {
				ready := j%2 == 0
				if _, err := e.s.Update(e.ctx, refs[i], lease.Mutation{Ready: &ready}); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	gate.Unlock()
	close(errc)
	for err := range errc {
		t.Fatalf("Update while the consumer was held: %v", err)
	}
	v.converge(t, e, ids)
}

func testWatchClosed(t *testing.T, s *suite) {
	e := s.open(t)
	w := watcherOf(t, e)
	f := startFeed(t, w)
	if c := f.next(t, 50*e.u); !c.c.Reset {
		t.Fatalf("first change %+v, want a Reset", c.c)
	}
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		c := f.next(t, 100*e.u)
		if c.err != nil {
			if !errors.Is(c.err, lease.ErrClosed) {
				t.Fatalf("Watch after Close: %v, want lease.ErrClosed", c.err)
			}
			break
		}
	}
	select {
	case <-f.done:
	case <-time.After(100 * e.u):
		t.Fatal("Watch did not end after its error")
	}
	for _, err := range w.Watch(e.ctx) {
		if !errors.Is(err, lease.ErrClosed) {
			t.Fatalf("Watch on a closed store: %v, want lease.ErrClosed", err)
		}
		return
	}
	t.Fatal("Watch on a closed store yielded nothing")
}
