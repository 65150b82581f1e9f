// Package leasetest is the conformance suite every [lease.Store] backend
// passes. A backend is done when its tests call [Run] (or [RunRealTime])
// and [RunModel] and they pass under -race.
//
//	func TestConformance(t *testing.T) {
//		leasetest.Run(t, func(t *testing.T, clk *leasetest.Clock, opts ...lease.Option) lease.Store {
//			s, err := memory.New(append(opts, lease.WithClock(clk))...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The factory gets the suite's [Clock] and the options the suite needs
// (TTL, window, thresholds, hooks), and returns a fresh store; the suite
// closes it. Errors are checked with errors.Is against the sentinels of
// package lease.
//
// # Time
//
// The suite expresses every duration in units and moves time with
// Clock.Advance. [Run] uses a fake clock with one-second units: Advance
// moves it at once and fires due timers. A backend whose expiry runs on a
// server's clock cannot follow a fake clock; [RunRealTime] gives it a real
// clock whose Advance sleeps, with short units (tens of milliseconds), and
// the factory ignores clk.
//
// # What it covers
//
// Auctions (opening on the first bid; ranking by free memory then arrival;
// the MAX_BIDS short circuit with the per-item override; dynamic max-bids
// from live nodes; threshold changes that keep the auction; the window as
// backstop; one pending bid per node; marker expiry; minimum bids; skipping
// bidders that are no longer live; one grant per round under 16 concurrent
// evaluators; the starvation count), leases (renewal single and batched,
// renewal after expiry, release, drain, owner updates with versions),
// fencing (fences increasing across grants; stale-fence operations
// refused; a fenced-register check over random concurrent histories), the
// [lease.Lease] handle (Done closed before the item can be granted again,
// and on refusal), hooks, cancelled contexts and use after Close.
//
// [RunModel] drives the backend and a trivially correct reference model
// with the same random operations and compares them step by step.
package leasetest
