// Package leasetest is the conformance suite every [lease.Store] backend
// passes. A backend is done when its tests call [Run] (or [RunRealTime]),
// [RunModel] (or [RunModelUntimed]) and [RunLinearizable] and they pass
// under -race. A backend whose clock cannot be moved runs [RunModelUntimed]:
// the same random operations without time steps, with hour-long TTLs and
// windows. A backend that implements lease.Watcher (a change feed) also
// passes [RunWatch], on real time: a Reset first, every listed write in
// order with rows that are Newer each time, and a consumer that lists at
// each Reset ending up with the store's rows, after concurrent writers and
// after a burst it could not keep up with.
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
// the factory ignores clk. On real time the subtests run at once, each
// on its own store.
//
// A server may remove expired state in a periodic sweep rather than at the
// instant it is due: etcd's leader revokes expired leases every 500 ms, so
// its keys lapse up to about half a second late, never early.
// [WithLapseLateness] allows for that: after each Advance past which a
// subtest expects a lease, window, pending-bid marker or node liveness to
// have lapsed, the suite waits that much longer. The checks that something
// is still held, open or pending just before its due time keep their exact
// times, so a backend whose leases lapse early still fails; memory and
// Redis run with no allowance.
//
// # What it covers
//
// Auctions (opening on the first bid; ranking by free memory then arrival;
// the MAX_BIDS short circuit with the per-item override; dynamic max-bids
// from live nodes; threshold changes that keep the auction; the window as
// backstop; one pending bid per node; marker expiry; minimum bids; skipping
// bidders that are no longer live; one grant per round under 16 concurrent
// evaluators; the starvation count), leases (renewal single and batched,
// renewal after expiry, refused and leaving the row unheld both when nobody
// has bid since and when another node's auction is open, release, drain, owner updates with versions),
// fencing (fences increasing across grants; stale-fence operations
// refused; a fenced-register check over random concurrent histories), the
// [lease.Lease] handle (Done closed before the item can be granted again,
// and on refusal; its deadline counted from when a renewal was sent, not
// from the reply, checked through a store whose replies come late), hooks,
// cancelled contexts and use after Close.
//
// [RunModel] drives the backend and a trivially correct reference model
// with the same random operations and compares them step by step.
//
// # Linearizability
//
// [RunLinearizable] records concurrent histories on real time, several
// clients (nodes) against one fresh store each, on three items with a short
// TTL and auction window, so that leases lapse and are granted again while
// the clients work, each call delayed on its way to the store and back as
// by a network, so that calls overlap (at least 30% of the operations of
// the histories must overlap another on the same item, or the test
// fails). Clients win items only by bidding and evaluating; holders
// renew (one lease, or all theirs in one batched call), update their rows,
// release, pause past the TTL (and renew as they wake, so histories hold
// renewals of lapsed leases), and use stale refs on purpose; everyone
// reads rows. Each history ([RecordHistory]) is then checked twice:
//
//   - [History.CheckLinearizable] checks it with porcupine
//     (github.com/anishathalye/porcupine) against a sequential model of one
//     item's row, partitioned by item: grants through auction close (who
//     wins, with what fence, in which round), renewals, releases, owner
//     updates with versions, and reads, with every field compared. Expiry is
//     the hard part of a sequential model, since the history does not know
//     the store's clock. The model does not assume a TTL longer than the
//     history, nor expiry at an arbitrary moment: each operation takes
//     effect at some instant between its call and return, the store's clock
//     agrees with the test's within a margin ([WithClockMargin]), and an
//     expiry, window or pending-bid marker that falls inside that span may
//     have passed or not (the model follows both, through porcupine's
//     power-set construction), while one outside it has certainly passed or
//     not. Expiries the store reports pin the model's. So it checks that
//     leases lapse on time, neither early nor late, as well as the order of
//     everything else. A history that is not linearizable fails with
//     porcupine's visualization written to a file, whose path is logged.
//   - [History.CheckFences] checks fences directly: one holder per fence,
//     strictly increasing fences across grants in real time, stale owner
//     operations refused with lease.ErrStaleFence, and a fenced register
//     outside the store (lease.CheckFence semantics) that holders write to
//     after each accepted update, sometimes after a pause past the TTL: its
//     accepted writes never mix two holders under one fence.
//
// A history may run across faults of the store: with [WithUnknownOutcome]
// a call that fails with an error the caller classes as indeterminate (a
// connection lost while Redis restarts) is recorded with an unknown
// outcome. The model lets it take effect, with any result, at any instant
// from its call to the end of the history, or not at all, and the fence
// check leaves it out; a history whose lost calls are counted as failures
// that changed nothing would be wrong whenever one of them had acted.
//
// The package's own tests wrap lease/memory in broken stores (an update that
// skips the owner check, stale reads, a frozen fence, leases that lapse
// before their reported expiry, renewals of lapsed leases nobody has taken
// since) and require the checks to catch them (the fence check, those that
// break fences; the RenewLapsed case, the lapsed renewals). A store that
// loses one reply in seven (the call carried out before the error, after
// it, or never) must pass with [WithUnknownOutcome], and stay caught when
// its leases also lapse early.
package leasetest
