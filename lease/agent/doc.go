// Package agent is the node side of package lease: a [Manager] that runs
// on each node of a fleet and, over any lease.Store, wins items at
// auction, holds their leases, indexes them within a memory budget, evicts
// over it and drains on shutdown. Package lease holds the model (the
// catalog, the auctions, fences, the Store interface and the
// lease.Lease handle); this package is built on it as etcd's concurrency
// package is built on clientv3, and no backend imports it.
//
// # Model
//
// A node is a name, an [Indexer] that builds and drops its in-memory
// indexes, and a memory budget. [NewManager] takes the store, the node's
// name and [Option]s ([WithIndexer] is required, [WithBudget] defaults to
// 1 GiB); [Manager.Run] does the work until its context is done:
//
//   - it heartbeats the node into the live set ([WithHeartbeatInterval]);
//   - it renews every held lease in one batched call (lease.RenewAll)
//     every [WithRenewInterval] (a third of [WithTTL] by default); a
//     refused or lapsed lease closes its Done, and the manager drops the
//     item;
//   - it scans the items (the store's lease.Lister, or [WithItemSource])
//     on a jittered interval ([WithScanInterval]), closes due auctions,
//     joins open auctions first, and bids its free memory (budget minus
//     used) on an item that fits; a rejected or lost bid backs that item
//     off with full jitter, exponentially ([WithBidBackoff]);
//   - when the item source is also a lease.Watcher (lease/memory,
//     lease/redis and lease/etcd are), it keeps a view of the catalog
//     fed by the change feed and scans the view instead of listing
//     every row each time: it lists only at the start, after each Reset
//     of the feed, and every [WithReconcileInterval] as a safety net.
//     Renewals are not in the feed, so it judges another node's lease
//     lapsed from the Expiry it has, by its clock and with the safety
//     margin, and a bid the store refuses as leased reads that row
//     again. An item source that is not
//     a Watcher (or one that hides Watch) keeps the listing scan;
//   - a scan comes early, 25 ms after its cause (an eighth of the scan
//     interval if that is shorter), when the node can bid again sooner
//     than its next tick: after its own bid closed an auction (that scan
//     may open the next one), and, to join open auctions only, when the
//     feed shows a change to the auction it bid in (closed, or granted to
//     it) or an auction open on an item that fits its free memory while
//     it bids in none, and after a bid the store refused; a scan that
//     could only join and found items to open an auction on sets the
//     moment the node opens one (a random one up to 250 ms later), and
//     later kicked scans leave that moment be (on a busy feed a kick
//     always comes first, and a node that put its open off at each would
//     only ever race the others to join); while its bid is pending, the
//     next scan comes no later than the end of that auction's window
//     (read from the row right after the bid, since the feed may not
//     show it), and that scan only joins: the node opens its next
//     auction at a random moment up to 250 ms later, so that nodes whose
//     auctions closed together do not open the next ones together. So a
//     node claims as
//     fast as auctions close, not one item per interval, without every
//     node opening an auction of its own at the same moment; a burst of
//     changes costs at most one scan per 25 ms;
//   - renewals come first: while the last renewal round took more than
//     half the renewal interval, the node bids on nothing (and counts no
//     item saturated), so that a store behind on its writes, with the
//     fleet's claims among them, does not cost the node the leases it
//     has; it bids again after a quick round;
//   - on a win it acquires the lease.Lease, indexes the item with at most
//     [WithIndexConcurrency] Index calls at once, and marks the row Ready
//     with its size under the lease's fence;
//   - when the scan finds a held item's row at another Commit, it calls
//     Index again under the same lease, while the Indexer keeps serving
//     the old index, and marks the row Ready with the new size once the
//     new one is built (a failure keeps the old one and backs off);
//   - when it loses a lease (a refused renewal, a lapsed deadline), it
//     keeps the item's index for [WithKeepLost] (default the TTL), so that
//     winning the item back at the same commit needs no Index call
//     ([Hooks].Reused); kept indexes count in [Manager.Used], not against
//     bids, and are dropped first, oldest first, when held and kept
//     indexes together exceed the budget;
//   - it reports, once each, unowned items whose Size or MinBid exceeds
//     its whole budget ([Hooks].Starved, [Manager.Starved], a log line):
//     it never bids on them, so no auction of theirs ever opens, let alone
//     closes without a winner (the store's lease.Hooks.ItemStarved);
//   - over budget it evicts ready items in the order of the
//     [EvictionPolicy] ([EvictLRU] by last [Manager.Touch], or
//     [EvictSizeTraffic]), releasing and dropping each; [Manager.Pin]ned
//     items are never evicted;
//   - with [WithReplication] it treats the replica slots of an item (see
//     lease.ReplicaID) as one item for placement and never holds two.
//
// # Lifecycle
//
// NewManager validates its options and starts nothing. Run may be called
// once. When its context is done it stops bidding and heartbeating,
// drains every held lease (marks it Draining, gives in-flight indexing up
// to [WithDrainTimeout], releases it), drops every index and returns once
// all its goroutines have exited. A negative drain timeout abandons the
// leases instead, as a crash would: they lapse at their TTL.
//
// The manager keeps its leases' local deadlines by [WithClock] with the
// margin of [WithSafetyMargin]; [WithTTL] tells it the store's TTL (it
// does not set it: the store's own options do).
//
// # Signals, autoscaling and tracing
//
// After each scan the manager passes its [Signals] to [Hooks].Scanned:
// the catalog's unclaimed items, those saturated (they fit the node's
// budget, not its free memory, and no item has been claimed for
// [WithSaturationRounds] scans: no node has room), those too large for
// any node of its size, its held leases, used bytes, live nodes and last
// query. [Hooks].Claimed gives each win's claim latency (since its scans
// first saw the item unclaimed), [Hooks].BidClosed each bid's window (to
// the close of its auction) and [Hooks].IndexTook each Index call's
// time. [Metrics] keeps the gauges.
//
// [WithAutoscaler] asks an [Autoscaler] for a [Decision] after each scan
// and passes Grow and Shrink to [Hooks].Scale; [Scaler] is a ready-made
// one (grow on saturation, shrink a node idle with nothing waiting, a
// cooldown between decisions). The program acts on them.
//
// [WithTracer] records OpenTelemetry spans: agent.claim from a bid to the
// close of its auction, agent.index around each Index call (the
// Indexer's context carries it) and agent.serve for [Manager.Serve].
// Without it no span is recorded and no global provider is read.
//
// # Concurrency
//
// A Manager's methods are safe for concurrent use; Touch, Pin, Held and
// Used may be called while Run runs. The Indexer is called from the
// manager's goroutines and must be safe for concurrent use. Hooks ([Hooks]
// with [WithHooks], its leases' lease.HolderHooks in [Hooks].Lease) are
// called synchronously and must not block. [Metrics] is a ready-made,
// lock-free set of counters and gauges fed by both and by the store's
// hooks.
//
// # Errors
//
// NewManager fails with an error wrapping lease.ErrInvalidOption (which
// matches lease.ErrInvalid too) for a nil store, an empty node name, a
// missing indexer, a store that is no Lister without an item source, or an
// option with an invalid value; a second Run fails with [ErrRunTwice]
// (which matches lease.ErrInvalid too). Run itself returns nil after a shutdown by its
// context: failures of the store while it runs (a heartbeat, a renewal,
// a bid, an indexing) are logged ([WithLogger]) and retried on the next
// round, and refused leases close their Done, never Run.
package agent
