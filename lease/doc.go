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
// A leased row's Expiry follows the renewals, except on a store made with
// [WithoutRowExpiry] whose renewals then write nothing ([RowExpiryReporter]):
// on such a store a lapse is known from the change feed or a Get.
//
// # Holding a lease
//
// [Acquire] wraps a won grant in a [Lease], whose Done channel is closed
// when the holder must stop acting as owner: a refused renewal, a release,
// or its local deadline, a safety margin before expiry by the holder's own
// clock. Because the store grants the item again only by an auction
// evaluated after expiry on the store's clock, Done closes before anyone
// else can win the item. [Lease] describes the margin; [RenewAll] renews
// many leases in one call. Acquire takes [HolderOption]s only (the
// holder's clock, hooks and margin): the TTL is the store's.
//
// # The node agent
//
// The agent that runs on each node (heartbeats, bidding under a memory
// budget, holding and renewing the leases it wins, indexing, eviction,
// draining on shutdown) is package lease/agent, built on this package's
// Store and Lease the way etcd's concurrency package is built on clientv3.
// This package does not import it.
//
// # Replication
//
// Optional N-way replication (off by default) keeps N copies of an item
// on N nodes, so reads survive the loss of a node without waiting for a
// reindex. Each copy is a replica slot, a catalog item of its own:
// [PutReplicated] puts slot 0 (the item's own ID, the primary) and slots
// 1..N-1 ([ReplicaID], e.g. "repo-1#1"). Slots are auctioned, leased and
// indexed like any item; lease/agent's Manager, with its WithReplication
// option, never bids on, or holds, two slots of one item, and its Indexer
// maps a slot back to its item with [SplitReplicaID]. A reader takes the
// rows of [Replicas] and reads from [Serving]: the primary if it is
// ready, else the first ready replica. When a node is lost, its slots lapse at their TTL and are
// won again by nodes that hold no other slot of the item, while the
// remaining copies serve.
//
// # Hooks
//
// [Hooks] report every auction and bid a store handles ([WithHooks]);
// [HolderHooks] report a [Lease]'s renewals and its end
// ([WithHolderHooks]), which a store never sees. A lease that ends because
// its holder released it reports an error wrapping [ErrReleased], so
// losses and releases are told apart. lease/agent's Metrics is a
// ready-made set of counters fed by them.
//
// # Backends
//
// This package holds the model, the interface and the shared [Config]; it
// imports no backend. Three backends implement [Store]:
//
//   - lease/memory: a goroutine-safe in-process store with an injectable
//     [Clock], for one process (tests, a single-process fleet).
//   - lease/redis: one Redis server shared by the fleet, its Lua scripts
//     judging time by the server's clock; a failover to a replica that
//     missed writes can grant an item twice (fence checks at the
//     resources are the second line).
//   - lease/etcd: an etcd cluster, replicated by raft: linearizable
//     transactions, fences from a counter in the row, TTLs as etcd leases
//     (whole seconds, lapsing up to about half a second late). It survives
//     the loss of a minority of members; without a quorum nothing is
//     granted or renewed.
//
// Every backend passes the conformance suite in lease/leasetest (the
// auction and lease rules, the model test, and a porcupine
// linearizability check of concurrent histories).
//
// # Choosing a backend
//
// The three differ in what they survive and what they cost; their grant
// and renew rates, measured side by side, are in the repository's
// docs/performance.md.
//
//	                  lease/memory          lease/redis                 lease/etcd
//	shared by         the goroutines of     every node that reaches     every node that reaches
//	                  one process           one Redis server            the etcd cluster
//	linearizable      yes (one mutex)       yes on one server (one Lua  yes (every write one
//	                                        script per call), also      transaction comparing the
//	                                        across a server restart     revisions it read), on one member
//	survives the      no: the state dies    no: one server; a restart   yes: a 3-member cluster keeps
//	loss of a node    with the process      without persistence loses   working with one member down
//	                                        the catalog
//	fence             a counter, +1 per     max(previous + 1, server    a counter in the row, bumped by
//	                  grant                 time in µs): still          the grant's own transaction;
//	                                        increasing after the data   kept by raft across leader
//	                                        is lost                     changes and a restart of the
//	                                                                    whole cluster
//	clock that        the process's         the Redis server's (TIME    etcd's leases (the leader's
//	decides expiry    (Clock, injectable)   in each script)             clock); TTLs in whole seconds
//
// The porcupine check of lease/leasetest confirms each "yes" above.
// Their failure modes:
//
//   - memory: only one process; nothing survives it.
//   - Redis: a failover to a replica that missed the last writes can grant
//     an item twice (two holders, the newer with the larger fence).
//     [WithLossGuard] covers only a total loss (the guard's epoch key gone
//     with the data); against a partial loss, fence checks at the
//     resources ([CheckFence]) are the only line. A client that retries
//     (go-redis does, 3 times, by default) can run a script twice: use
//     MaxRetries -1.
//   - etcd: without a quorum no grant, renewal or release succeeds, so
//     holders' local deadlines run out and their leases end (Done
//     closes); the fleet stops changing hands until the quorum is back,
//     but nothing is granted twice. The leader revokes expired etcd leases
//     in a sweep every 500 ms, so a lease, auction window or pending bid
//     lapses up to about half a second after its TTL (never before):
//     regrants come that much later; the conformance suite runs with
//     leasetest.WithLapseLateness(750ms). A newly elected leader renews
//     every etcd lease to its full TTL (unless the server runs with etcd's
//     experimental lease checkpointing), so after a leader change a lapse
//     can come up to a TTL late. TTLs, windows and liveness windows must
//     be whole seconds, and a round's bids must fit one transaction (about
//     120 with the server's default --max-txn-ops of 128).
//
// # Lifecycle, concurrency, errors
//
// Backends' constructors take the [Option]s of this package, validated by
// [NewConfig] (a backend documents the settings it has no use for, as
// lease/redis does the Clock), and start nothing; Close is idempotent,
// after which every method returns an error wrapping [ErrClosed]. Every
// method of a store, and of a [Lease], is safe for concurrent use.
// Failures wrap the sentinels of errors.go, to be tested with errors.Is:
// an invalid argument or option wraps [ErrInvalid] (an invalid option,
// Config field or constructor argument wraps [ErrInvalidOption], which
// matches ErrInvalid too), an owner operation
// refused wraps [ErrNotHeld] or [ErrStaleFence], a refused bid names its
// reason ([ErrBidPending], [ErrBidTooLow], [ErrLeased],
// [ErrAuctionClosed]).
//
// # Why the surface is this large
//
// lease exports more names than most packages (over 60, counting
// methods) because it is a plug point whose backends (lease/memory,
// lease/redis, lease/etcd) and suite (lease/leasetest) import only lease:
// everything they share is here. The groups: the [Store] interface and
// its optional capabilities ([Lister], [LiveCounter], [MaxBidsSetter],
// [Watcher]); the data model ([Item], [Row], [Ref], [Fence], [State],
// [Bid], [BidResult], [AuctionResult], [Outcome], [Grant], [Renewal],
// [Mutation], [Change]); the shared configuration ([Config],
// [NewConfig], the [Option]s, [Hooks], [Clock], [TimerClock],
// [SystemClock]); the holder's side ([Lease], [Acquire], the
// [HolderOption]s, [HolderHooks], [RenewAll], [CheckFence]); replication
// ([ReplicaSep], [ReplicaID], [SplitReplicaID], [PutReplicated],
// [Replicas], [Serving]); and the sentinels.
package lease
