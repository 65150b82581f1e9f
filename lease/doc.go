// Package lease is the ownership layer of an in-memory serving fleet: a
// catalog of items (repositories, shards), TTL leases with fencing tokens,
// and the capacity auctions through which nodes win items.
//
// # Model
//
// The catalog holds one [Row] per item: what to index (Commit, Size), who
// owns it (Owner, Expiry, Fence, State idle/leased/draining), whether the
// owner serves it (Ready, LastIndexed), and how it is auctioned (MaxBids
// override, MinBid, the open auction's Round, Bids and deadline, and
// Unleased, the count of auctions closed without a winner).
//
// An item is granted only by an auction; there is no direct acquire:
//
//   - A node bids its free memory with [Store.Bid]. The first bid opens an
//     auction with a window (Config.AuctionWindow, default 60s); a node has
//     at most one unaccepted bid pending, anywhere, and its marker expires
//     PendingGrace after the window even if the auction is never closed.
//     A bid below the item's MinBid (raised to size × MinBidFactor when the
//     owner reports a size) is refused.
//   - The auction closes when its window passes (the hard backstop) or,
//     earlier, when its bids reach the threshold (the short circuit): the
//     item's MaxBids override, else the number of nodes that heartbeated
//     within the liveness window (with DynamicMaxBids), else the static
//     MaxBids. The threshold is read at each bid and evaluation, so a change
//     never cancels an auction in progress: every bid placed stays in it,
//     and a lowered threshold closes it with all of them.
//   - [Store.Evaluate] closes a due auction. Any number of nodes may call it;
//     each round is closed by exactly one evaluation. The best bid wins (see
//     [Bid.Beats]: most free memory, then earliest arrival on the store);
//     bids below MinBid, or from nodes no longer live with LiveBiddersOnly,
//     are skipped for the next best. The grant carries a [Fence] greater
//     than every earlier fence of the item.
//
// The owner renews its lease ([Store.Renew], one or many at once), releases
// it, or drains it (mark Draining, finish, release). Every owner operation
// names its grant by a [Ref] and is refused with [ErrStaleFence] once the
// item has been granted again, or [ErrNotHeld] once the lease expired or was
// released. Resources outside the catalog check fences with [CheckFence].
//
// # Holding a lease
//
// [Acquire] wraps a won grant in a [Lease], whose Done channel is closed
// when the holder must stop acting as owner: a refused renewal, a release,
// or its local deadline, SafetyMargin before expiry by the holder's own
// clock. Because the store grants the item again only by an auction
// evaluated after expiry on the store's clock, Done closes before anyone
// else can win the item. [Lease] describes the margin.
//
// # The node manager
//
// A [Manager] is a node's agent over a Store. [NewManager] takes the node's
// name, an [Indexer] (WithIndexer), a memory budget (WithBudget) and
// options, and starts nothing; [Manager.Run] does the work until its
// context is done:
//
//   - it heartbeats the node into the live set (WithHeartbeatInterval);
//   - it renews every held lease in one batched call ([RenewAll]) every
//     WithRenewInterval (a third of the TTL by default); a refused or lapsed
//     lease closes its Done, and the manager drops the item;
//   - it scans the items (the store's [Lister], or WithItemSource) on a
//     jittered interval, closes due auctions, joins open auctions first,
//     and bids its free memory (budget minus used) on an item that fits;
//     a rejected or lost bid backs that item off with full jitter,
//     exponentially (WithBidBackoff);
//   - on a win it acquires the [Lease], indexes the item with at most
//     WithIndexConcurrency Index calls at once, and marks the row Ready
//     with its size under the lease's fence;
//   - over budget it evicts ready items in the order of the
//     [EvictionPolicy] ([EvictLRU] by last [Manager.Touch], or
//     [EvictSizeTraffic]), releasing and dropping each; [Manager.Pin]ned
//     items are never evicted;
//   - when its context is done it stops bidding and heartbeating, drains
//     every held lease (Draining, in-flight indexing given up to
//     WithDrainTimeout, release) and returns once all its goroutines have
//     exited. A negative drain timeout abandons the leases instead, as a
//     crash would.
//
// Lease events reach the [Hooks] set with WithLeaseOptions (the manager
// also reports its own bids there); wins, indexing, evictions and the
// held-lease and live-node gauges reach [ManagerHooks].
//
// # Replication
//
// Optional N-way replication (off by default) keeps N copies of an item
// on N nodes, so reads survive the loss of a node without waiting for a
// reindex. Each copy is a replica slot, a catalog item of its own:
// [PutReplicated] puts slot 0 (the item's own ID, the primary) and slots
// 1..N-1 ([ReplicaID], e.g. "repo-1#1"). Slots are auctioned, leased and
// indexed like any item; a [Manager] with [WithReplication] never bids on,
// or holds, two slots of one item, and its [Indexer] maps a slot back to
// its item with [SplitReplicaID]. A reader takes the rows of [Replicas]
// and reads from [Serving]: the primary if it is ready, else the first
// ready replica. When a node is lost, its slots lapse at their TTL and are
// won again by nodes that hold no other slot of the item, while the
// remaining copies serve.
//
// # Metrics
//
// [Hooks] and [ManagerHooks] report every event; [Metrics] is a ready-made
// set of atomic counters and gauges fed by them (auctions started, won,
// without winner, short-circuited, timed out; bids placed and rejected by
// reason; the effective max-bids, [AuctionResult].Threshold; live nodes;
// leases held, won, renewed, lost, released; evictions), read with
// [Metrics.Snapshot]. A lease that ends because its holder released it
// reports an error wrapping [ErrReleased], so losses and releases are
// told apart.
//
// # Backends
//
// This package holds the model, the interface and the shared [Config]; it
// imports no backend. lease/memory is a goroutine-safe in-process store with
// an injectable [Clock]. Every backend passes the conformance suite in
// lease/leasetest.
//
// # Lifecycle, concurrency, errors
//
// Backends' constructors take the [Option]s of this package and start
// nothing; Close is idempotent, after which every method returns an error
// wrapping [ErrClosed]. Every method is safe for concurrent use. Failures
// wrap the sentinels of errors.go, to be tested with errors.Is. [Hooks]
// receive auction, bid and lease events for metrics.
package lease
