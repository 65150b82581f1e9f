// Package redis is a [lease.Store] on Redis, through go-redis v9: the
// catalog, its fenced TTL leases and its capacity auctions, shared by every
// node of a fleet. Its semantics are those of lease/memory, checked by the
// same conformance suite (lease/leasetest, on real time against a real
// redis-server).
//
// # Usage
//
//	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
//	defer rdb.Close()
//	s, err := redis.New(rdb, "fleet:", lease.WithTTL(30*time.Second), lease.WithDynamicMaxBids(30*time.Second))
//	if err != nil { ... }
//	defer s.Close()
//	_ = s.Put(ctx, lease.Item{ID: "repo-1", Commit: "abc"})
//	_ = s.Heartbeat(ctx, "node-a")
//	res, err := s.Bid(ctx, "repo-1", "node-a", freeBytes)
//	// ... later, from any node: s.Evaluate(ctx, "repo-1")
//	if res.Result != nil && res.Result.Grant != nil && res.Result.Grant.Holder == "node-a" {
//		l, err := lease.Acquire(ctx, s, res.Result.Grant.Ref)
//		...
//	}
//
// The package has no runnable Example: every call needs a Redis server, and
// house style allows an Example only with an // Output comment that runs
// without one.
//
// # Clock
//
// The Redis server's clock is the only clock. Every script reads
// redis.call('TIME') (microseconds) and judges lease expiry, auction
// windows and node liveness by it; the client's clock (lease.WithClock) is
// ignored by the store and used only by a [lease.Lease] for its local
// deadline. Expiry is lazy, as in lease/memory: a lapsed lease stays in the
// row until the next script touching the row turns it idle, and Get
// reports it idle at once. Redis 7 replicates scripts by their effects, so
// scripts may read TIME and then write; Redis < 5 would need
// redis.replicate_commands() and is not supported.
//
// # Keys
//
// All keys live under the prefix given to [New] (P below). Hash tags {…}
// put every key of one item in one cluster slot:
//
//	P{item}:row             HASH   the catalog row: commit size maxbids minbid
//	                               owner exp(µs) fence state ready version
//	                               last(ns) round unleased, and the open
//	                               auction's open(0/1) deadline(µs)
//	P{item}:bids            LIST   the open auction's bids "free:node" in
//	                               arrival order (Seq = position)
//	P{node:name}:pending    STRING "round:item", PX = window + grace: the
//	                               node's one pending bid
//	Pitems                  SET    every item ID put, which Rows walks with
//	                               SSCAN (lease.Lister), never KEYS
//	Pnodes                  ZSET   node -> last heartbeat (µs); pruned with
//	                               ZREMRANGEBYSCORE, counted with ZCOUNT over
//	                               the liveness window, never KEYS
//	Pepoch                  STRING with lease.WithLossGuard: the server time
//	                               (µs) at which an evaluation found the
//	                               data new or lost; never deleted
//	Pchanges                STREAM the change feed (lease.Watcher): one entry
//	                               per write, fields _item _now(µs) _seq
//	                               _bids and the row's hash fields as the
//	                               write left them; MAXLEN ~ FeedMaxLen
//	Pchanges:seq            STRING the feed's entry counter (INCR), the
//	                               _seq of its last entry
//
// A bid and an evaluation touch the item's keys, the bidders' pending
// markers and the nodes set, which sit in different slots: this version
// targets a standalone Redis (or Sentinel). The hash tags keep the per-item
// part ready for Cluster, where the bidder markers and the live-node set
// would have to move into the item's slot or into a second step.
//
// # Scripts
//
// Every state change is one Lua script, run by go-redis's Script.Run
// (EVALSHA, falling back to EVAL on NOSCRIPT, so SCRIPT FLUSH or a restart
// costs one EVAL): put, bid (which opens the auction, appends the bid, sets
// the pending marker and, at the threshold, evaluates in the same script),
// evaluate, renew (all the refs of a batch in one call, one round trip),
// release, update, heartbeat; get and the live count are scripts too, to
// read TIME with the data. A script runs atomically, so an evaluation
// checks that the auction is open and due and closes it in one step:
// exactly one evaluation takes effect per round however many nodes
// evaluate at once, and the others see NoAuction. Bids are ranked in the
// script by free memory, ties by arrival on the server (list order).
// Offers are Lua numbers (doubles), exact up to [MaxFree] = 2^53 bytes;
// larger bids are refused with lease.ErrInvalid.
//
// # Change feed
//
// Store implements lease.Watcher. Every script that changes a row's
// catalog fields, ownership or auction (put; bid, when it opens or joins an
// auction, reported once with the closed auction when its short circuit
// closes it; an evaluation that closes an auction, granted or not;
// release; update) ends by appending
// the row as it left it to the stream Pchanges (XADD MAXLEN ~ [FeedMaxLen],
// in the same atomic script, so entries of one item are in the order the
// writes took effect). Renewals, which move only the expiry, and lapses
// are not written. An entry carries the whole row (the hash fields, the
// number of bids and the server time of the write), so a reader decodes it
// without reading the row again: about 300 bytes and one HGETALL, INCR and
// XADD more per write, and the stream holds about FeedMaxLen of them
// (a few MB).
//
// Watch reads the stream with XREAD BLOCK (one second; a cancelled Watch
// may take that long to return, since go-redis does not interrupt a
// blocking read), starting at the entry that was last when it started,
// after yielding a Reset. Each entry carries a sequence number from
// Pchanges:seq; a reader that sees a gap (entries trimmed before it read
// them, or the counter started again after the data was lost) yields a
// Reset before the entry. It also yields a Reset after a lost connection
// (retried with backoff) and when, at the end of an empty block, the
// stream's tail is behind its position (the stream was lost and made again
// with lower IDs). A closed store, or an error reply that retrying cannot
// mend, ends it with that error.
//
// # Fences
//
// A grant's fence is max(previous fence + 1, server time in µs). The +1
// makes fences strictly increase while the row survives, whatever the
// clock does. The clock term keeps them increasing when the row does not
// survive: after a restart that lost the data (no persistence, or a
// failover to a replica that missed the last writes), the previous fence is
// gone and the new one is the server's current time in µs. Every earlier
// fence of the item was at most the server time of its grant plus the
// number of grants that fell in the same microsecond (each grant is a
// separate script execution of several µs, so in practice at most the
// grant's own time), and that grant happened before the restart. So the
// new fence is larger as long as the server's clock (or the new primary's)
// has not been set back past the last grant before the loss, which a
// restart's own duration (tens of ms at least) covers for ordinary NTP
// corrections. A clock stepped back by more, on a server that also lost its
// data, is the one case this does not cover. Fences are about 2^51 today,
// exact in Lua's doubles and in uint64 for centuries.
//
// Owner operations (renew, release, update) check holder and fence in
// their script: an older fence gets lease.ErrStaleFence, an unknown or
// lapsed one lease.ErrNotHeld, and a row lost with the data
// lease.ErrNotFound, so a holder from before the loss is refused.
//
// # Faults
//
// The tests run owners as real processes against redis-servers of their
// own and prove, by fences and by a fence-checked register outside the
// store: a SIGKILLed owner is replaced within TTL plus the auction window,
// its acknowledged writes kept and its old fence refused; an owner stopped
// (SIGSTOP) past its TTL learns on SIGCONT that it lost the lease and its
// writes are refused; SCRIPT FLUSH under load fails no operation; a delay
// beyond the safety margin closes the holder's Done before the item can be
// granted elsewhere, and a stall longer than the TTL loses the lease.
//
// Persistence decides what a Redis restart costs. With appendonly and
// appendfsync always, a restart keeps every row, so leases and fences
// survive it: concurrent histories across a restart (SIGKILL or graceful)
// stay linearizable, the calls that lost their connection counted as of
// unknown outcome. That holds for a client that does not retry
// (MaxRetries -1). go-redis retries by default (3 times): a script that
// ran but whose reply was lost with its connection runs again once the
// server is back, and the caller gets the second run's answer: in the
// tests an evaluation that granted answered NoAuction, and a bid that had
// been placed (and then won) answered lease.ErrAuctionClosed, so about
// one history in two across a restart was not linearizable. A caller
// that retries must expect such answers; an update run twice would bump
// the version twice. Without persistence (or with a lossy fsync policy) the rows
// are gone: owners learn it at their next renewal (lease.ErrNotFound, which
// closes Done), the catalog must be put again before anyone can bid, and
// fences still increase (above). Between the loss and the old holder's next
// renewal, a new grant could exist while the old holder still believes it
// holds the item. lease.WithLossGuard closes that window: the store keeps
// an epoch key, set once and never deleted, and an evaluation that finds
// it missing (new data, or data lost) sets it and holds every grant until
// one TTL after it, answering NotDue with the end of the hold as Deadline
// while the auction keeps its bids. Every lease granted before the loss
// has expired by then, so its holder has closed Done. The price is that a
// fresh catalog's first grants wait one TTL too, since new data cannot be
// told from lost data. The guard does not cover a partial loss (a lossy
// fsync policy, a failover to a replica that missed the last writes),
// where the epoch key survives: there, and always as a second line, fence
// checks at the resources keep holders safe. Use CheckFence there.
//
// # Lifecycle
//
// New makes no request and starts nothing. The caller owns the client:
// Close marks the store closed (every later call returns an error wrapping
// lease.ErrClosed) but neither closes the client nor deletes keys. A Store
// is safe for concurrent use. Hooks are called after the script returns.
package redis
