package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
func Run(t *testing.T, newStore Factory) {
	(&suite{newStore: newStore, u: time.Second}).run(t)
}

// RunRealTime runs the conformance suite on real time, every duration
// expressed in multiples of unit (100ms is a good choice against a local
// server; etcd, whose leases count whole seconds, needs 1s): Advance sleeps. Use it for backends whose expiry runs on a
// server's clock. The subtests run at once, each on its own store. An
// invalid option (a negative lateness) fails t.
func RunRealTime(t *testing.T, newStore Factory, unit time.Duration, opts ...RealTimeOption) {
	var cfg realTimeConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			t.Fatal(err)
		}
	}
	s := &suite{newStore: newStore, u: unit, real: true, late: cfg.late}
	s.run(t)
}

// RealTimeOption configures [RunRealTime].
type RealTimeOption func(*realTimeConfig) error

type realTimeConfig struct {
	late time.Duration
}

// WithLapseLateness lets a lease, auction window, pending-bid marker or
// node liveness lapse up to d after its due time, never before (default
// 0). It is for a backend whose server removes expired state in a periodic
// sweep, such as etcd, whose leader revokes expired leases every 500 ms:
// the suite waits d longer after each Advance past which it expects
// something to have lapsed, and only there. The checks that something is
// still held, open or pending just before its due time are unchanged, so a
// lapse that comes early still fails. d must stay well below one unit:
// some subtests expect one thing to have lapsed while another, due a unit
// later, has not yet.
func WithLapseLateness(d time.Duration) RealTimeOption {
	return func(c *realTimeConfig) error {
		if d < 0 {
			return fmt.Errorf("leasetest: lapse lateness %v: %w", d, lease.ErrInvalid)
		}
		c.late = d
		return nil
	}
}

// env is one subtest's store, clock and time unit.
type env struct {
	t   *testing.T
	s   lease.Store
	clk *Clock
	u   time.Duration
	// late is the lapse lateness allowed (WithLapseLateness), added by
	// advancePast.
	late time.Duration
	ctx  context.Context
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
	}
}

// suite opens a fresh store per subtest.
type suite struct {
	newStore Factory
	u        time.Duration
	real     bool
	late     time.Duration
}

func (s *suite) open(t *testing.T, opts ...lease.Option) *env {
	t.Helper()
	clk := RealClock()
	if !s.real {
		clk = NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	st := s.newStore(t, clk, append(baseOptions(s.u), opts...)...)
	t.Cleanup(func() { _ = st.Close() })
	return &env{t: t, s: st, clk: clk, u: s.u, late: s.late, ctx: context.Background()}
}

// run runs every subtest. On real time the timed ones run all at once,
// each on its own store and clock, since they spend most of their time
// asleep; the busy untimed ones (many calls, no Advance) run first, one
// after the other, so that their load does not delay the calls that must
// land within a unit of a due time.
func (s *suite) run(t *testing.T) {
	var wg sync.WaitGroup
	busy := map[string]bool{"FencedRegister": true, "Lister": true}
	tests := []struct {
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
		{"RenewLapsed", testRenewLapsed},
		{"Release", testRelease},
		{"Drain", testDrain},
		{"Update", testUpdate},
		{"FencesIncrease", testFencesIncrease},
		{"StaleFence", testStaleFence},
		{"FencedRegister", testFencedRegister},
		{"DoneBeforeRegrant", testDoneBeforeRegrant},
		{"DoneOnRefusal", testDoneOnRefusal},
		{"DeadlineFromSend", testDeadlineFromSend},
		{"Starvation", testStarvation},
		{"Hooks", testHooks},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
		{"Lister", testLister},
	}
	if s.real {
		for _, tc := range tests {
			if busy[tc.name] {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) })
			}
		}
	}
	for _, tc := range tests {
		switch {
		case !s.real:
			t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) })
			continue
		case busy[tc.name]:
			continue
		}
		// Not t.Parallel: go test runs only -parallel (GOMAXPROCS by
		// default) parallel subtests at once, and these sleep.
		wg.Go(func() { t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) }) })
	}
	wg.Wait()
}

func (e *env) advance(units float64) { e.clk.Advance(time.Duration(units * float64(e.u))) }

// advancePast advances units and then the lapse lateness: for an Advance
// after which the subtest expects a lease, window, marker or liveness to
// have lapsed.
func (e *env) advancePast(units float64) {
	e.advance(units)
	if e.late > 0 {
		e.clk.Advance(e.late)
	}
}

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
