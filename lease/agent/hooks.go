package agent

import "github.com/indexkit/indexkit/lease"

// Hooks receive node-side events that [lease.Hooks] does not cover. Every
// field may be nil; hooks are called synchronously and must not block.
// [Metrics] provides a ready-made set.
type Hooks struct {
	Won     func(ref lease.Ref)                        // a lease was won and acquired
	Indexed func(ref lease.Ref, size int64, err error) // Index returned
	Evicted func(ref lease.Ref, size int64)            // released and dropped over budget
	// Held gets the number of leases the node holds each time it changes
	// (a gauge). Calls are serialized, and the last one reports the count
	// after the last change.
	Held func(n int)
	// LiveNodes gets the store's count of live nodes after each heartbeat,
	// when the store is a [lease.LiveCounter] (a gauge).
	LiveNodes func(n int)

	// Lease are the hooks of the manager's leases: each [lease.Lease] it
	// acquires calls their LeaseRenewed and LeaseLost
	// ([lease.WithHolderHooks]), and the manager reports its own bids to
	// their BidPlaced and BidRejected. Their auction hooks are the store's
	// and are not called.
	Lease lease.Hooks
}
