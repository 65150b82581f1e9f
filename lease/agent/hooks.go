package agent

import (
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Hooks receive a node's events: its manager's and, in Lease, its leases'.
// Every field may be nil; hooks are called synchronously and must not
// block. [Metrics] provides a ready-made set.
type Hooks struct {
	Won     func(ref lease.Ref)                        // a lease was won and acquired
	Indexed func(ref lease.Ref, size int64, err error) // Index returned
	Evicted func(ref lease.Ref, size int64)            // released and dropped over budget
	// Reused reports a won item served from the index kept since the node
	// lost it (WithKeepLost), at the same commit: no Index call.
	Reused func(ref lease.Ref, size int64)
	// Starved reports, once, an item the node will not bid on: unowned,
	// and its Size or MinBid (need) above the node's whole budget. Again
	// only if it fitted, or was owned, in between. See [Manager.Starved].
	Starved func(item string, need int64)
	// Held gets the number of leases the node holds each time it changes
	// (a gauge). Calls are serialized, and the last one reports the count
	// after the last change.
	Held func(n int)
	// LiveNodes gets the store's count of live nodes after each heartbeat,
	// when the store is a [lease.LiveCounter] (a gauge).
	LiveNodes func(n int)

	// BidPlaced and BidRejected report the manager's own bids, as the
	// store's [lease.Hooks] of the same names do for every bid the store
	// handles. BidRejected gets the sentinel that says why:
	// lease.ErrBidPending, ErrBidTooLow, ErrLeased or ErrAuctionClosed.
	BidPlaced   func(item, node string, freeMemory int64)
	BidRejected func(item, node string, reason error)

	// Claimed reports each item won with its claim latency: how long it
	// had waited unclaimed since the node's scans first saw it so (a new
	// row, a lapsed or released lease). A win the scans never saw
	// unclaimed is not reported.
	Claimed func(ref lease.Ref, waited time.Duration)
	// BidClosed reports the window of each of the node's bids: from the
	// bid to the close of its auction as the node learned of it (its own
	// closing bid or evaluation, or the row another node closed), won or
	// lost.
	BidClosed func(item string, window time.Duration)
	// IndexTook reports how long each Index call ran (not the wait for an
	// index slot), with its error; Indexed follows it.
	IndexTook func(ref lease.Ref, took time.Duration, err error)
	// Scanned gets the node's [Signals] after each scan (gauges).
	Scanned func(Signals)
	// Scale gets each decision of the autoscaler ([WithAutoscaler]) other
	// than Steady, with the signals it was made on.
	Scale func(Decision, Signals)

	// Lease are the hooks of the manager's leases (LeaseRenewed,
	// LeaseLost): each [lease.Lease] it acquires gets them
	// ([lease.WithHolderHooks]).
	Lease lease.HolderHooks
}
