// Package etcd is a [lease.Store] on etcd, through go.etcd.io/etcd/client/v3
// (v3.7; checked against Debian's etcd-server 3.4.23): the catalog, its
// fenced TTL leases and its capacity auctions, shared by every node of a
// fleet and replicated by etcd's raft. It also implements lease.Lister,
// lease.LiveCounter, lease.Watcher and lease.MaxBidsSetter.
//
// # Usage
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second})
//	s, err := etcd.New(cli, "fleet/", lease.WithTTL(30*time.Second))
//	defer s.Close()
//	res, err := s.Bid(ctx, "repo-1", "node-a", freeBytes)
//
// The package has no runnable Example: every call needs an etcd server,
// and house style allows an Example only with an // Output comment that
// runs without one.
//
// # Keys
//
// Under the prefix P given to [New]:
//
//	P r/<item>   the catalog row (JSON): catalog fields, version, the
//	             newest grant's owner, fence, state and ready flag, the
//	             round, Unleased, and the open auction (its bids in
//	             arrival order, its reported deadline)
//	P o/<item>   "fence holder" of the live grant, attached to the grant's
//	             etcd lease: the grant is live exactly while this key exists
//	P e/<item>   the expiry reported for the grant (client ns), on the same
//	             etcd lease; not written with lease.WithoutRowExpiry
//	P a/<item>   the open auction's round, on an etcd lease of the window:
//	             the window has passed when the key is gone
//	P p/<node>   "round:item", the node's pending bid, on an etcd lease of
//	             window + grace
//	P n/<node>   the node's liveness key, on an etcd lease of the liveness
//	             window (LiveNodes counts them with a count-only range)
//
// # Transactions
//
// Every write reads the item's keys in one read transaction and commits
// one transaction that compares the mod revisions of the row, the owner
// key and the window key with what it read (and that the bidder has no
// pending marker); a lost compare retries from the read. So exactly one
// evaluation takes effect per round, and a decision is never taken on a
// lease or window that lapsed in between: the lapse is a deletion, a new
// revision. A bid that reaches the threshold closes the auction in the
// same transaction. Markers of a round's bidders are deleted by nested
// transactions that compare their value with the round's tag. A round's
// bids must fit one transaction: the server's --max-txn-ops (128 by
// default) bounds them at about 120 bids per round.
//
// # Fences
//
// The fence is a counter in the row, incremented by the grant's own
// transaction: it comes from etcd, never from a client clock, and it
// strictly increases per item for as long as the row exists, across
// leader changes and a restart of the whole cluster (etcd loses no
// acknowledged write). The lease.LossGuard option is ignored.
//
// # Time
//
// etcd has no time API, and the store reads no client clock to decide an
// expiry. The lease TTL, the auction window, the pending-bid marker and
// node liveness are etcd leases; a key is gone when its lease is. Renew
// checks the ref against the owner key in a transaction that writes the
// expiry key, and then keeps the grant's etcd lease alive; Release deletes
// the owner key and revokes the lease.
//
// A renewal's write is what a large fleet's store spends most on: at
// 5,000 leases and a TTL of 4 s, renewals every TTL/3 are 3,750 writes a
// second. [lease.WithoutRowExpiry] drops it: Renew then reads the owner
// keys (a read-only transaction, no raft entry) and keeps their etcd
// leases alive, grants write no expiry key, and leased rows carry no
// Expiry (ReportsRowExpiry says so). Nothing the store decides changes:
// the etcd lease is the lease either way. A fleet's agents lose nothing
// by it (they learn lapses from Watch, not from Expiry); a tool that shows
// when leases end does. In BenchmarkFleetClaimsUnderRenewals (lease/agent:
// 8 nodes claim 800 items while 4,200 other leases are renewed, one
// member, 2 cores) it takes claims from 20.6 to 37.4 a second. etcd lease TTLs are whole seconds: New refuses
// (lease.ErrInvalid) a TTL, window, window plus grace or liveness window
// that is not a whole number of seconds, rather than round it silently. A
// server raises a TTL below its minimum (3/2 of its election timeout,
// rounded up to seconds: 2 s with the defaults) to that minimum.
//
// The leader revokes expired leases in a loop every 500 ms, so a lease,
// window or marker lapses up to about half a second after its TTL, never
// before: the etcd lease is granted (or kept alive) after the call that
// asked for it was sent. A lease that lapses late is safe: a holder's
// local deadline ([lease.Lease]) counts from when it sent the call, before
// the store's lease began, so Done closes before anyone can win the item.
// A late lapse does delay the regrant by up to that half second.
//
// The expiries and deadlines the store reports (Grant.Expiry,
// Renewal.Expiry, Row.Expiry, Row.AuctionDeadline) are best effort: the
// client's clock before the etcd lease was granted or renewed, plus its
// TTL. They are never used to decide anything.
//
// # Faults
//
// What the fault tests (three members, owner processes, a fenced
// register) show: a leader killed during auctions or renewals costs an
// election (the holders kept their leases through it in every run); a
// member cut off with the clients pinned to it stops them from renewing,
// so their leases lapse and the rest of the cluster grants the items
// again one TTL (plus the late lapse and a window) later, with greater
// fences. A new leader restarts the TTL of every etcd lease (etcd keeps
// no remaining TTLs by default), so a grant outlives a leader change or
// a restart of the whole cluster by up to one TTL after the election:
// the items of a holder that died in the outage are granted again only
// then, and a holder whose local deadline passed during the outage finds
// the grant still its own (Bid answers lease.ErrLeased, the row names
// it) and may take it up again with lease.Acquire, under the same fence.
// Fences survive the restart. Cap the client's reconnect backoff
// (clientv3.Config.DialOptions, grpc.WithConnectParams): gRPC's default
// grows from one second by 1.6 times per attempt, so after an outage of
// a few seconds a client may find the cluster back seconds late.
//
// # Listing and watching
//
// Rows reads the catalog in pages of 256 rows, every page at the revision
// of the first (one consistent snapshot), with the owner, expiry and window
// keys of each page in one more read transaction. Watch reads every row
// and owner key at one revision, then follows the owner keys, pending
// markers and rows (one key range, without the keys that renewals and
// heartbeats write) with an etcd watch from the next revision, keeping its
// copy current from the events: a change costs a watcher no read (before,
// each change cost every watcher two, which made the feed most of a
// fleet's requests while it claimed). Its rows carry no Expiry; see
// [Store.Watch].
//
// # Lifecycle
//
// New makes no request and starts nothing. The caller owns the client:
// Close marks the store closed (every later call returns an error wrapping
// lease.ErrClosed, a running Watch ends with it) but neither closes the
// client nor deletes keys. A Store is safe for concurrent use. Hooks are
// called after the transaction that decided them committed. Errors wrap
// the sentinels of package lease; an etcd error is wrapped with the
// operation that failed.
package etcd
