package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Factory returns a fresh, empty store configured by opts. A backend with an
// in-process clock passes clk on (lease.WithClock(clk)); a backend whose
// clock is a server's ignores clk, and its tests run the suite with
// [RunRealTime]. The suite closes the store at the end of each subtest.
type Factory func(t *testing.T, clk *Clock, opts ...lease.Option) lease.Store

// Run runs the conformance suite with a fake clock: time moves only when the
// suite advances it, in units of one second.
func Run(t *testing.T, newStore Factory) { run(t, newStore, time.Second, false) }

// RunRealTime runs the conformance suite on real time, every duration
// expressed in multiples of unit (50ms is a good choice against a local
// server): Advance sleeps. Use it for backends whose expiry runs on a
// server's clock.
func RunRealTime(t *testing.T, newStore Factory, unit time.Duration) {
	run(t, newStore, unit, true)
}

// env is one subtest's store, clock and time unit.
type env struct {
	t   *testing.T
	s   lease.Store
	clk *Clock
	u   time.Duration
	ctx context.Context
}

// The suite's settings, in units.
const (
	ttlU    = 10
	windowU = 6
	graceU  = 1
	starveN = 3
	marginU = 1
)

func baseOptions(u time.Duration) []lease.Option {
	return []lease.Option{
		lease.WithTTL(ttlU * u),
		lease.WithAuctionWindow(windowU * u),
		lease.WithPendingGrace(graceU * u),
		lease.WithStarveAfter(starveN),
		lease.WithSafetyMargin(marginU * u),
	}
}

// suite opens a fresh store per subtest.
type suite struct {
	newStore Factory
	u        time.Duration
	real     bool
}

func (s *suite) open(t *testing.T, opts ...lease.Option) *env {
	t.Helper()
	clk := RealClock()
	if !s.real {
		clk = NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	st := s.newStore(t, clk, append(baseOptions(s.u), opts...)...)
	t.Cleanup(func() { _ = st.Close() })
	return &env{t: t, s: st, clk: clk, u: s.u, ctx: context.Background()}
}

func run(t *testing.T, newStore Factory, u time.Duration, real bool) {
	s := &suite{newStore: newStore, u: u, real: real}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"PutGet", testPutGet},
		{"AuctionOpensOnFirstBid", testAuctionOpens},
		{"Ranking", testRanking},
		{"ShortCircuit", testShortCircuit},
		{"DynamicMaxBids", testDynamicMaxBids},
		{"ThresholdChangeKeepsAuction", testThresholdChange},
		{"WindowBackstop", testWindowBackstop},
		{"OnePendingBid", testOnePendingBid},
		{"PendingMarkerExpires", testPendingExpires},
		{"MinBid", testMinBid},
		{"LiveBiddersOnly", testLiveBiddersOnly},
		{"ConcurrentEvaluators", testConcurrentEvaluators},
		{"Renew", testRenew},
		{"RenewAfterExpiry", testRenewAfterExpiry},
		{"Release", testRelease},
		{"Drain", testDrain},
		{"Update", testUpdate},
		{"FencesIncrease", testFencesIncrease},
		{"StaleFence", testStaleFence},
		{"FencedRegister", testFencedRegister},
		{"DoneBeforeRegrant", testDoneBeforeRegrant},
		{"DoneOnRefusal", testDoneOnRefusal},
		{"Starvation", testStarvation},
		{"Hooks", testHooks},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
		{"Lister", testLister},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) })
	}
}

func (e *env) advance(units float64) { e.clk.Advance(time.Duration(units * float64(e.u))) }

func (e *env) put(it lease.Item) {
	e.t.Helper()
	if err := e.s.Put(e.ctx, it); err != nil {
		e.t.Fatalf("Put(%+v): %v", it, err)
	}
}

func (e *env) get(id string) lease.Row {
	e.t.Helper()
	r, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", id, err)
	}
	return r
}

func (e *env) bid(id, node string, free int64) lease.BidResult {
	e.t.Helper()
	r, err := e.s.Bid(e.ctx, id, node, free)
	if err != nil {
		e.t.Fatalf("Bid(%q, %q, %d): %v", id, node, free, err)
	}
	return r
}

func (e *env) bidErr(id, node string, free int64, want error) {
	e.t.Helper()
	_, err := e.s.Bid(e.ctx, id, node, free)
	if !errors.Is(err, want) {
		e.t.Fatalf("Bid(%q, %q, %d) = %v, want %v", id, node, free, err, want)
	}
}

func (e *env) evaluate(id string) lease.AuctionResult {
	e.t.Helper()
	r, err := e.s.Evaluate(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Evaluate(%q): %v", id, err)
	}
	return r
}

func (e *env) heartbeat(nodes ...string) {
	e.t.Helper()
	for _, n := range nodes {
		if err := e.s.Heartbeat(e.ctx, n); err != nil {
			e.t.Fatalf("Heartbeat(%q): %v", n, err)
		}
	}
}

// grant wins item for node through a one-bid auction (the item's MaxBids
// is set to 1).
func (e *env) grant(id, node string) lease.Ref {
	e.t.Helper()
	r := e.get(id)
	if r.MaxBids != 1 {
		e.put(lease.Item{ID: id, Commit: r.Commit, Size: r.Size, MaxBids: 1, MinBid: r.MinBid})
	}
	res := e.bid(id, node, 1<<30)
	g := wantGrant(e.t, res.Result, node)
	return g.Ref
}

func wantGrant(t *testing.T, r *lease.AuctionResult, node string) *lease.Grant {
	t.Helper()
	if r == nil {
		t.Fatalf("auction still open, want a grant to %q", node)
	}
	if r.Outcome != lease.Granted || r.Grant == nil {
		t.Fatalf("auction outcome %v, want a grant to %q", r.Outcome, node)
	}
	if r.Grant.Holder != node {
		t.Fatalf("auction won by %q, want %q", r.Grant.Holder, node)
	}
	return r.Grant
}

func (e *env) renew(refs ...lease.Ref) []lease.Renewal {
	e.t.Helper()
	rs, err := e.s.Renew(e.ctx, refs...)
	if err != nil {
		e.t.Fatalf("Renew: %v", err)
	}
	if len(rs) != len(refs) {
		e.t.Fatalf("Renew of %d leases returned %d results", len(refs), len(rs))
	}
	return rs
}

func testPutGet(t *testing.T, s *suite) {
	e := s.open(t)
	if _, err := e.s.Get(e.ctx, "nope"); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	if err := e.s.Put(e.ctx, lease.Item{}); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Put(empty ID) = %v, want ErrInvalid", err)
	}
	e.put(lease.Item{ID: "a", Commit: "c1", Size: 10, MaxBids: 2, MinBid: 5})
	r := e.get("a")
	if r.ID != "a" || r.Commit != "c1" || r.Size != 10 || r.MaxBids != 2 || r.MinBid != 5 {
		t.Fatalf("Get = %+v", r)
	}
	if r.Owner != "" || r.State != lease.Idle || r.Fence != 0 || r.Round != 0 || r.Bids != 0 {
		t.Fatalf("new row not idle: %+v", r)
	}
	v := r.Version
	e.put(lease.Item{ID: "a", Commit: "c2"})
	if r := e.get("a"); r.Commit != "c2" || r.Version <= v {
		t.Fatalf("after second Put: %+v (version was %d)", r, v)
	}
	if _, err := e.s.Bid(e.ctx, "nope", "n1", 1); !errors.Is(err, lease.ErrNotFound) {
		t.Fatalf("Bid(missing) = %v, want ErrNotFound", err)
	}
}

func testAuctionOpens(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	if r := e.evaluate("a"); r.Outcome != lease.NoAuction {
		t.Fatalf("Evaluate before any bid: %v, want NoAuction", r.Outcome)
	}
	b := e.bid("a", "n1", 100)
	if b.Round != 1 || b.Seq != 1 || b.Bids != 1 || b.Result != nil {
		t.Fatalf("first bid: %+v", b)
	}
	r := e.get("a")
	if r.Round != 1 || r.Bids != 1 || r.AuctionDeadline.IsZero() || r.Owner != "" {
		t.Fatalf("row after first bid: %+v", r)
	}
	if ev := e.evaluate("a"); ev.Outcome != lease.NotDue {
		t.Fatalf("Evaluate inside the window: %v, want NotDue", ev.Outcome)
	}
	b = e.bid("a", "n2", 50)
	if b.Round != 1 || b.Seq != 2 || b.Bids != 2 {
		t.Fatalf("second bid: %+v", b)
	}
}

func testRanking(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.bid("a", "small", 100)
	e.bid("a", "first", 300)
	e.bid("a", "second", 300)
	e.advance(windowU)
	r := e.evaluate("a")
	g := wantGrant(t, &r, "first")
	if !r.TimedOut || r.ShortCircuited || r.Bids != 3 || g.Fence == 0 || g.Round != 1 {
		t.Fatalf("result %+v grant %+v", r, g)
	}
	row := e.get("a")
	if row.Owner != "first" || row.State != lease.Leased || row.Fence != g.Fence || row.Bids != 0 || !row.AuctionDeadline.IsZero() {
		t.Fatalf("row after grant: %+v", row)
	}
	if r := e.evaluate("a"); r.Outcome != lease.NoAuction {
		t.Fatalf("second Evaluate: %v, want NoAuction", r.Outcome)
	}
	e.bidErr("a", "small", 1000, lease.ErrLeased)
}

func testShortCircuit(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMaxBids(3))
	e.put(lease.Item{ID: "a"})
	e.bid("a", "n1", 10)
	if b := e.bid("a", "n2", 30); b.Result != nil {
		t.Fatalf("closed after 2 of 3 bids: %+v", b.Result)
	}
	b := e.bid("a", "n3", 20)
	g := wantGrant(t, b.Result, "n2")
	if !b.Result.ShortCircuited || b.Result.TimedOut || g.Bids != 3 {
		t.Fatalf("short circuit result %+v", b.Result)
	}
	// The per-item override beats the static threshold.
	e.put(lease.Item{ID: "b", MaxBids: 1})
	wantGrant(t, e.bid("b", "n4", 1).Result, "n4")
}

func testDynamicMaxBids(t *testing.T, s *suite) {
	e := s.open(t, lease.WithDynamicMaxBids(5*s.u), lease.WithMaxBids(10))
	e.put(lease.Item{ID: "a"})
	e.heartbeat("n1", "n2", "n3")
	if lc, ok := e.s.(lease.LiveCounter); ok {
		if n, err := lc.LiveNodes(e.ctx); err != nil || n != 3 {
			t.Fatalf("LiveNodes = %d, %v; want 3", n, err)
		}
	}
	e.bid("a", "n1", 1)
	e.bid("a", "n2", 3)
	b := e.bid("a", "n3", 2)
	if g := wantGrant(t, b.Result, "n2"); !b.Result.ShortCircuited || g.Bids != 3 {
		t.Fatalf("result %+v", b.Result)
	}
	// Nodes that stopped heartbeating no longer count.
	e.advance(5)
	e.heartbeat("n1")
	e.put(lease.Item{ID: "b"})
	wantGrant(t, e.bid("b", "n1", 1).Result, "n1")
	if lc, ok := e.s.(lease.LiveCounter); ok {
		if n, err := lc.LiveNodes(e.ctx); err != nil || n != 1 {
			t.Fatalf("LiveNodes = %d, %v; want 1", n, err)
		}
	}
	// With no live node at all the static threshold applies.
	e.advance(5)
	e.put(lease.Item{ID: "c"})
	if b := e.bid("c", "n1", 1); b.Result != nil {
		t.Fatalf("closed with no live node and MaxBids 10: %+v", b.Result)
	}
}

func testThresholdChange(t *testing.T, s *suite) {
	e := s.open(t, lease.WithDynamicMaxBids(5*s.u))

	// The threshold falls below the bids already placed: the auction closes
	// with every one of them considered.
	e.put(lease.Item{ID: "down"})
	e.heartbeat("n1", "n2", "n3", "n4")
	e.bid("down", "n1", 10)
	e.bid("down", "n2", 20)
	if r := e.evaluate("down"); r.Outcome != lease.NotDue {
		t.Fatalf("2 of 4 bids: %v, want NotDue", r.Outcome)
	}
	e.advance(5)
	e.heartbeat("n1", "n2")
	r := e.evaluate("down")
	if g := wantGrant(t, &r, "n2"); g.Bids != 2 || !r.ShortCircuited {
		t.Fatalf("after threshold fell: %+v", r)
	}

	// The threshold rises past the bids: the auction stays open with its
	// bids, and the window closes it.
	e.put(lease.Item{ID: "up"})
	e.bid("up", "n1", 30)
	e.heartbeat("n3", "n4", "n5")
	e.bid("up", "n3", 5)
	if row := e.get("up"); row.Bids != 2 || row.Round != 1 {
		t.Fatalf("after threshold rose: %+v", row)
	}
	if r := e.evaluate("up"); r.Outcome != lease.NotDue {
		t.Fatalf("2 of 5 bids: %v, want NotDue", r.Outcome)
	}
	e.advance(windowU)
	r = e.evaluate("up")
	if g := wantGrant(t, &r, "n1"); g.Bids != 2 || !r.TimedOut {
		t.Fatalf("at the backstop: %+v", r)
	}
}

func testWindowBackstop(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMaxBids(10))
	e.put(lease.Item{ID: "a"})
	e.bid("a", "n1", 1)
	e.advance(windowU - 1)
	if r := e.evaluate("a"); r.Outcome != lease.NotDue {
		t.Fatalf("before the window: %v", r.Outcome)
	}
	e.bid("a", "n2", 1)
	e.advance(1)
	r := e.evaluate("a")
	if g := wantGrant(t, &r, "n1"); !r.TimedOut || g.Bids != 2 {
		t.Fatalf("at the window: %+v", r)
	}
	// A bid that arrives after the window closes the auction instead.
	e.put(lease.Item{ID: "b"})
	e.bid("b", "n3", 1)
	e.advance(windowU)
	e.bidErr("b", "n4", 100, lease.ErrAuctionClosed)
	if row := e.get("b"); row.Owner != "n3" {
		t.Fatalf("late bid did not close the auction: %+v", row)
	}
}

func testOnePendingBid(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 10)
	e.bid("a", "n2", 5)
	e.bidErr("b", "n1", 10, lease.ErrBidPending)
	e.bidErr("a", "n1", 10, lease.ErrBidPending)
	e.advance(windowU)
	r := e.evaluate("a")
	wantGrant(t, &r, "n1")
	// Closing the auction clears the winner's and the loser's markers.
	e.bid("b", "n1", 10)
	e.put(lease.Item{ID: "c"})
	e.bid("c", "n2", 10)
}

func testPendingExpires(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 10)
	e.advance(windowU)
	e.bidErr("b", "n1", 10, lease.ErrBidPending) // within the grace
	e.advance(graceU)
	e.bid("b", "n1", 10) // a's auction was never evaluated
	if r := e.evaluate("a"); r.Outcome != lease.Granted {
		t.Fatalf("a: %v", r.Outcome)
	}
}

func testMinBid(t *testing.T, s *suite) {
	e := s.open(t, lease.WithMinBidFactor(1.5))
	e.put(lease.Item{ID: "a", MinBid: 500, MaxBids: 1})
	e.bidErr("a", "n1", 499, lease.ErrBidTooLow)
	ref := wantGrant(t, e.bid("a", "n1", 500).Result, "n1").Ref
	size := int64(1000)
	row, err := e.s.Update(e.ctx, ref, lease.Mutation{Size: &size})
	if err != nil {
		t.Fatal(err)
	}
	if row.MinBid != 1500 || row.Size != 1000 {
		t.Fatalf("after reporting size: %+v", row)
	}
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	e.bidErr("a", "n2", 1499, lease.ErrBidTooLow)
	e.bid("a", "n2", 1500)
}

func testLiveBiddersOnly(t *testing.T, s *suite) {
	e := s.open(t, lease.WithLiveBiddersOnly(), lease.WithDynamicMaxBids(3*s.u))
	e.put(lease.Item{ID: "a", MaxBids: 5})
	e.heartbeat("big", "small")
	e.bid("a", "big", 100)
	e.bid("a", "small", 10)
	e.advance(3)
	e.heartbeat("small")
	e.advance(windowU - 3)
	e.heartbeat("small")
	r := e.evaluate("a")
	wantGrant(t, &r, "small") // big stopped heartbeating: next best wins
}

func testConcurrentEvaluators(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	for round := range 20 {
		for i := range 4 {
			e.bid("a", fmt.Sprintf("n%d", i), int64(i))
		}
		e.advance(windowU)
		var granted, others atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				r, err := e.s.Evaluate(e.ctx, "a")
				switch {
				case err != nil:
					t.Errorf("Evaluate: %v", err)
				case r.Outcome == lease.Granted:
					granted.Add(1)
				case r.Outcome == lease.NoAuction:
					others.Add(1)
				default:
					t.Errorf("Evaluate: %v", r.Outcome)
				}
			})
		}
		wg.Wait()
		if granted.Load() != 1 || others.Load() != 15 {
			t.Fatalf("round %d: %d grants, %d no-auction", round, granted.Load(), others.Load())
		}
		row := e.get("a")
		if row.Owner != "n3" {
			t.Fatalf("round %d: owner %q", round, row.Owner)
		}
		if err := e.s.Release(e.ctx, lease.Ref{Item: "a", Holder: "n3", Fence: row.Fence}); err != nil {
			t.Fatal(err)
		}
	}
}

func testRenew(t *testing.T, s *suite) {
	e := s.open(t)
	var refs []lease.Ref
	for i := range 5 {
		id := fmt.Sprintf("i%d", i)
		e.put(lease.Item{ID: id})
		refs = append(refs, e.grant(id, fmt.Sprintf("n%d", i)))
	}
	e.advance(ttlU - 1)
	rs := e.renew(refs[0])
	if rs[0].Err != nil || rs[0].TTL != ttlU*s.u {
		t.Fatalf("Renew: %+v", rs[0])
	}
	e.advance(2) // refs[1:] expire, refs[0] was renewed
	if row := e.get("i0"); row.Owner != "n0" || !row.Expiry.Equal(rs[0].Expiry) {
		t.Fatalf("renewed row: %+v, expiry %v", row, rs[0].Expiry)
	}
	// A batch where some leases are gone.
	rs = e.renew(refs...)
	if rs[0].Err != nil || rs[0].Ref != refs[0] {
		t.Fatalf("batch renew of a held lease: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if !errors.Is(r.Err, lease.ErrNotHeld) {
			t.Fatalf("batch renew of an expired lease: %+v", r)
		}
	}
	rs = e.renew(lease.Ref{Item: "missing", Holder: "x", Fence: 1})
	if !errors.Is(rs[0].Err, lease.ErrNotFound) {
		t.Fatalf("renew of a missing item: %v", rs[0].Err)
	}
	wrong := refs[0]
	wrong.Holder = "intruder"
	if rs := e.renew(wrong); !errors.Is(rs[0].Err, lease.ErrNotHeld) {
		t.Fatalf("renew by another holder: %v", rs[0].Err)
	}
}

func testRenewAfterExpiry(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	e.advance(ttlU)
	if rs := e.renew(ref); !errors.Is(rs[0].Err, lease.ErrNotHeld) {
		t.Fatalf("renew after expiry: %v", rs[0].Err)
	}
	row := e.get("a")
	if row.Owner != "" || row.State != lease.Idle || row.Fence != ref.Fence {
		t.Fatalf("expired row: %+v", row)
	}
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("update after expiry: %v", err)
	}
}

func testRelease(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	bad := ref
	bad.Fence--
	if err := e.s.Release(e.ctx, bad); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("release with an old fence: %v", err)
	}
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if row := e.get("a"); row.Owner != "" || row.State != lease.Idle {
		t.Fatalf("released row: %+v", row)
	}
	if err := e.s.Release(e.ctx, ref); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("second release: %v", err)
	}
	// Released, the item is auctioned again at once.
	ref2 := e.grant("a", "n2")
	if ref2.Fence <= ref.Fence {
		t.Fatalf("fence %d after %d", ref2.Fence, ref.Fence)
	}
}

func testDrain(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u))
	if err != nil {
		t.Fatal(err)
	}
	var during lease.Row
	err = l.Drain(e.ctx, func(ctx context.Context) error {
		during = e.get("a")
		e.bidErr("a", "n2", 10, lease.ErrLeased)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during.State != lease.Draining || during.Owner != "n1" {
		t.Fatalf("row while draining: %+v", during)
	}
	if row := e.get("a"); row.State != lease.Idle || row.Owner != "" {
		t.Fatalf("row after drain: %+v", row)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after drain")
	}
}

func testUpdate(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a", Commit: "c0"})
	ref := e.grant("a", "n1")
	commit, ready, at := "c1", true, e.clk.Now().Truncate(time.Millisecond)
	row, err := e.s.Update(e.ctx, ref, lease.Mutation{Commit: &commit, Ready: &ready, LastIndexed: &at})
	if err != nil {
		t.Fatal(err)
	}
	if row.Commit != "c1" || !row.Ready || !row.LastIndexed.Equal(at) {
		t.Fatalf("updated row: %+v", row)
	}
	old := row.Version - 1
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{IfVersion: &old}); !errors.Is(err, lease.ErrVersionConflict) {
		t.Fatalf("update with an old version: %v", err)
	}
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{IfVersion: &row.Version}); err != nil {
		t.Fatalf("update with the current version: %v", err)
	}
	other := ref
	other.Holder = "n2"
	if _, err := e.s.Update(e.ctx, other, lease.Mutation{Ready: &ready}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("update by a non-owner: %v", err)
	}
	// A new grant starts unready.
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	e.grant("a", "n2")
	if row := e.get("a"); row.Ready || row.Commit != "c1" {
		t.Fatalf("after regrant: %+v", row)
	}
}

func testFencesIncrease(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	var last lease.Fence
	for i := range 30 {
		ref := e.grant("a", fmt.Sprintf("n%d", i%3))
		if ref.Fence <= last {
			t.Fatalf("grant %d: fence %d after %d", i, ref.Fence, last)
		}
		last = ref.Fence
		if i%2 == 0 {
			if err := e.s.Release(e.ctx, ref); err != nil {
				t.Fatal(err)
			}
		} else {
			e.advance(ttlU)
		}
	}
}

func testStaleFence(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	old := e.grant("a", "n1")
	e.advance(ttlU)
	cur := e.grant("a", "n2")
	commit := "zombie"
	if _, err := e.s.Update(e.ctx, old, lease.Mutation{Commit: &commit}); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("update with a stale fence: %v", err)
	}
	if rs := e.renew(old); !errors.Is(rs[0].Err, lease.ErrStaleFence) {
		t.Fatalf("renew with a stale fence: %v", rs[0].Err)
	}
	if err := e.s.Release(e.ctx, old); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("release with a stale fence: %v", err)
	}
	if row := e.get("a"); row.Owner != "n2" || row.Commit == "zombie" || row.Fence != cur.Fence {
		t.Fatalf("row after stale writes: %+v", row)
	}
	if err := lease.CheckFence(cur.Fence, old.Fence); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("CheckFence: %v", err)
	}
}

// testFencedRegister runs random concurrent histories of grants, renewals,
// owner writes and releases while time moves, and checks that the store
// acted as a fenced register: one holder per fence, fences increasing in
// real-time order, and no owner operation accepted after a later grant of
// the item had completed.
func testFencedRegister(t *testing.T, s *suite) {
	e := s.open(t)
	items := []string{"a", "b"}
	for _, id := range items {
		e.put(lease.Item{ID: id, MaxBids: 1})
	}
	type op struct {
		kind       string // grant, write, renew, release
		item, node string
		fence      lease.Fence
		call, ret  int64
	}
	var (
		stamp atomic.Int64
		mu    sync.Mutex
		hist  []op
	)
	record := func(o op) {
		mu.Lock()
		hist = append(hist, o)
		mu.Unlock()
	}
	const nodes, steps = 6, 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if !s.real {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e.clk.Advance(s.u / 2)
				time.Sleep(20 * time.Microsecond)
			}
		})
	}
	var workers sync.WaitGroup
	for n := range nodes {
		node := fmt.Sprintf("n%d", n)
		workers.Go(func() {
			held := map[string]lease.Ref{}
			for i := range steps {
				id := items[(n+i)%len(items)]
				ref, have := held[id]
				c := stamp.Add(1)
				switch {
				case !have:
					res, err := e.s.Bid(e.ctx, id, node, int64(n))
					r := stamp.Add(1)
					if err == nil && res.Result != nil && res.Result.Grant != nil {
						g := res.Result.Grant
						record(op{"grant", id, g.Holder, g.Fence, c, r})
						if g.Holder == node {
							held[id] = g.Ref
						}
					}
				case i%7 == 0:
					err := e.s.Release(e.ctx, ref)
					r := stamp.Add(1)
					if err == nil {
						record(op{"release", id, node, ref.Fence, c, r})
					}
					delete(held, id)
				case i%3 == 0:
					rs, err := e.s.Renew(e.ctx, ref)
					r := stamp.Add(1)
					if err == nil && rs[0].Err == nil {
						record(op{"renew", id, node, ref.Fence, c, r})
					} else {
						delete(held, id)
					}
				default:
					v := fmt.Sprintf("%s@%d", node, ref.Fence)
					_, err := e.s.Update(e.ctx, ref, lease.Mutation{Commit: &v})
					r := stamp.Add(1)
					if err == nil {
						record(op{"write", id, node, ref.Fence, c, r})
					} else if !errors.Is(err, lease.ErrNotHeld) && !errors.Is(err, lease.ErrStaleFence) {
						t.Errorf("Update: %v", err)
					} else {
						delete(held, id)
					}
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()

	grants := map[string]map[lease.Fence]op{}
	for _, id := range items {
		grants[id] = map[lease.Fence]op{}
	}
	n := 0
	for _, o := range hist {
		if o.kind == "grant" {
			if prev, dup := grants[o.item][o.fence]; dup {
				t.Fatalf("%s: fence %d granted twice: %+v and %+v", o.item, o.fence, prev, o)
			}
			grants[o.item][o.fence] = o
			n++
		}
	}
	if n < 4 {
		t.Fatalf("only %d grants in the history; the test exercised too little", n)
	}
	for _, o := range hist {
		for f, g := range grants[o.item] {
			// Grants in real-time order have increasing fences.
			if o.kind == "grant" && g.ret < o.call && f >= o.fence {
				t.Fatalf("%s: grant fence %d (called at %d) after grant fence %d (done at %d)", o.item, o.fence, o.call, f, g.ret)
			}
			// No owner operation with an older fence is accepted once a
			// newer grant has completed.
			if o.kind != "grant" && g.ret < o.call && f > o.fence {
				t.Fatalf("%s: %s by %s with fence %d accepted at %d after grant of fence %d done at %d", o.item, o.kind, o.node, o.fence, o.call, f, g.ret)
			}
		}
		if o.kind != "grant" {
			g, ok := grants[o.item][o.fence]
			if !ok || g.node != o.node {
				t.Fatalf("%s: %s by %s with fence %d, granted to %+v", o.item, o.kind, o.node, o.fence, g)
			}
		}
	}
}

func testDoneBeforeRegrant(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	var lost atomic.Int32
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u),
		lease.WithHolderHooks(lease.Hooks{LeaseLost: func(lease.Ref, error) { lost.Add(1) }}))
	if err != nil {
		t.Fatal(err)
	}
	e.advance(ttlU - marginU - 0.5)
	select {
	case <-l.Done():
		t.Fatal("Done closed before the local deadline")
	default:
	}
	if l.ValidFor() <= 0 {
		t.Fatal("ValidFor ≤ 0 before the local deadline")
	}
	e.advance(0.5)
	waitDone(t, l)
	if !errors.Is(l.Err(), lease.ErrNotHeld) || lost.Load() != 1 {
		t.Fatalf("Err = %v, lost hooks %d", l.Err(), lost.Load())
	}
	// The holder has given up, yet the store has not expired the lease:
	// nobody else can win the item yet.
	e.bidErr("a", "n2", 10, lease.ErrLeased)
	e.advance(marginU)
	g := e.grant("a", "n2")
	if g.Fence <= ref.Fence {
		t.Fatalf("fence %d after %d", g.Fence, ref.Fence)
	}
	if _, err := l.Update(e.ctx, lease.Mutation{}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Update on a lost lease: %v", err)
	}
}

func waitDone(t *testing.T, l *lease.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
}

func testDoneOnRefusal(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.advance(ttlU / 2)
		if err := l.Renew(e.ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	// Another party releases on the holder's behalf (an operator).
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(e.ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Renew after release: %v", err)
	}
	waitDone(t, l)
	if _, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk)); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Acquire of a released lease: %v", err)
	}
}

func testStarvation(t *testing.T, s *suite) {
	var starved atomic.Int32
	e := s.open(t, lease.WithHooks(lease.Hooks{ItemStarved: func(string, int) { starved.Add(1) }}))
	for i := 1; i <= starveN; i++ {
		e.put(lease.Item{ID: "a", MinBid: 10})
		e.bid("a", "n1", 10)
		e.put(lease.Item{ID: "a", MinBid: 1000}) // now nobody qualifies
		e.advance(windowU)
		r := e.evaluate("a")
		if r.Outcome != lease.NoWinner || r.Unleased != i || r.Starved != (i >= starveN) {
			t.Fatalf("auction %d: %+v", i, r)
		}
		if row := e.get("a"); row.Unleased != i {
			t.Fatalf("auction %d: row %+v", i, row)
		}
	}
	if starved.Load() != 1 {
		t.Fatalf("ItemStarved called %d times", starved.Load())
	}
	e.put(lease.Item{ID: "a"})
	e.grant("a", "n1")
	if row := e.get("a"); row.Unleased != 0 {
		t.Fatalf("a grant left Unleased at %d", row.Unleased)
	}
}

func testHooks(t *testing.T, s *suite) {
	var mu sync.Mutex
	got := map[string]int{}
	inc := func(k string) { mu.Lock(); got[k]++; mu.Unlock() }
	h := lease.Hooks{
		AuctionStarted:        func(string, uint64) { inc("started") },
		AuctionWon:            func(lease.AuctionResult) { inc("won") },
		AuctionNoWinner:       func(lease.AuctionResult) { inc("nowinner") },
		AuctionShortCircuited: func(lease.AuctionResult) { inc("short") },
		AuctionTimedOut:       func(lease.AuctionResult) { inc("timedout") },
		BidPlaced:             func(string, string, int64) { inc("placed") },
		BidRejected: func(_, _ string, reason error) {
			for _, r := range []error{lease.ErrBidPending, lease.ErrBidTooLow, lease.ErrLeased, lease.ErrAuctionClosed} {
				if errors.Is(reason, r) {
					inc("rejected:" + r.Error())
				}
			}
		},
	}
	e := s.open(t, lease.WithHooks(h))
	e.put(lease.Item{ID: "a", MaxBids: 2, MinBid: 5})
	e.put(lease.Item{ID: "b"})
	e.bid("a", "n1", 5)
	e.bidErr("b", "n1", 5, lease.ErrBidPending)
	e.bidErr("a", "n2", 4, lease.ErrBidTooLow)
	e.bid("a", "n2", 6) // short circuit
	e.bidErr("a", "n3", 6, lease.ErrLeased)
	e.bid("b", "n3", 1)
	e.advance(windowU)
	e.evaluate("b")
	want := map[string]int{
		"started": 2, "won": 2, "short": 1, "timedout": 1, "placed": 3,
		"rejected:lease: bid pending": 1, "rejected:lease: bid too low": 1, "rejected:lease: leased": 1,
	}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("hook %s: %d calls, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

func testCancelledContext(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ref := lease.Ref{Item: "a", Holder: "n1", Fence: 1}
	for name, err := range map[string]error{
		"Put":       e.s.Put(ctx, lease.Item{ID: "b"}),
		"Get":       second(e.s.Get(ctx, "a")),
		"Bid":       second(e.s.Bid(ctx, "a", "n1", 1)),
		"Evaluate":  second(e.s.Evaluate(ctx, "a")),
		"Renew":     second(e.s.Renew(ctx, ref)),
		"Release":   e.s.Release(ctx, ref),
		"Update":    second(e.s.Update(ctx, ref, lease.Mutation{})),
		"Heartbeat": e.s.Heartbeat(ctx, "n1"),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
	if row := e.get("a"); row.Round != 0 {
		t.Fatalf("a cancelled Bid opened an auction: %+v", row)
	}
}

func second[T any](_ T, err error) error { return err }

func testClosed(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ref := lease.Ref{Item: "a", Holder: "n1", Fence: 1}
	for name, err := range map[string]error{
		"Put":       e.s.Put(e.ctx, lease.Item{ID: "b"}),
		"Get":       second(e.s.Get(e.ctx, "a")),
		"Bid":       second(e.s.Bid(e.ctx, "a", "n1", 1)),
		"Evaluate":  second(e.s.Evaluate(e.ctx, "a")),
		"Renew":     second(e.s.Renew(e.ctx, ref)),
		"Release":   e.s.Release(e.ctx, ref),
		"Update":    second(e.s.Update(e.ctx, ref, lease.Mutation{})),
		"Heartbeat": e.s.Heartbeat(e.ctx, "n1"),
	} {
		if !errors.Is(err, lease.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}
