// Package scatter is the fan-out side of the query path: a [Gather] asks
// many find backends at once — a pool of indexers, each behind a
// [find.Client] — and merges their answers; it is itself a [find.Backend],
// so a [find.Handler] serves it like any other (and a Gather can sit behind
// another). The find API itself (the wire model, the handler, the HTTP
// client and the store backend) lives in package [find].
//
// # Gather
//
//   - Find asks every backend concurrently, each under its own deadline
//     ([WithBackendTimeout], default 5 s as indexstar's ResultMaxWait; the
//     caller's context bounds it too), and yields each result the moment
//     any backend yields it: the first result never waits for a slow
//     backend. Results are de-duplicated exactly by (provider ID, context
//     ID), keeping the first seen and every other result of every backend
//     (unlike the reference, which drops the rest of a backend's list at its
//     first duplicate). When backends disagree on the metadata of one
//     (provider, context), the first seen wins; the others are counted in
//     [GatherStats] and reported to [GatherHooks].OnDisagreement.
//   - Find ends with no error only when every backend asked answered
//     (results or "not found"); otherwise with a [*find.PartialError]
//     saying how many answered and how many timed out, joining the others'
//     errors. A find.Handler turns that into the find.HeaderBackends
//     header, or 502/504 when nothing was found — never a false 404.
//   - Each backend has a circuit breaker ([BreakerConfig], [WithBreaker])
//     in which timeouts count as failures: after 10 failures within 1 s it
//     opens and the backend is skipped (counted as not answered, with
//     [ErrBreakerOpen]) for a backoff that doubles up to a minute, then
//     half-opens to let probes through, closing after 5 consecutive
//     successes. [GatherHooks].OnStateChange reports every change.
//   - [WithCache] puts a size- and TTL-bounded LRU of complete answers in
//     front of Find, with a separate TTL for "not found"; partial answers
//     and errors are never cached.
//   - Providers and Provider ask every backend and keep one record per
//     provider: the newest by LastAdvertisementTime, carrying FrozenAt and
//     FrozenAtTime over from a frozen indexer's record when another indexer
//     continues the provider (see [Gather.Provider]).
//   - [NewRing] builds a consistent-hash ring over the multihash keyspace
//     with a replication factor; with [WithRing], Find asks only the owners
//     of each multihash (keyspace sharding, the seed design's next step).
//
// # Ring mode
//
// With [WithRing], the owners of a multihash are replicas, each holding its
// whole answer, and Find takes the first complete one instead of merging:
// it asks every owner at once, yields the results of the first owner to
// yield one as they arrive (holding the others'), and ends as soon as any
// owner has answered completely (results or "not found"), adding that
// owner's held results not yet yielded and cancelling the rest. An owner
// that fails — an error, a 5xx such as a query node's 503 while it catches
// up, running out of time, its breaker open — does not count; if the
// leading owner fails, the one holding most results takes over. Only when
// every owner of the multihash has failed does Find end with a
// [*find.PartialError] (Answered 0 of the owners; the handler answers
// 502/504, never 404). A lookup thus touches R backends, not N, and is as
// fast as its fastest complete owner. [WithHedge] asks the owners one after
// the other instead — the next when the delay passes without a complete
// answer, or at once when those asked have failed — so that a lookup
// usually touches one backend; over HTTP/1.1 it also spares the
// connection each cancelled request of a losing owner closes
// (BenchmarkGatherRing counts them). [Gather.FindBatch] (POST /multihash
// through a find.Handler) splits a batch by owner: each backend gets one
// request with only the multihashes it owns (with a hedge, those it is the
// primary of, then rounds for the rest), and each multihash takes the
// first complete answer among its owners.
//
// A ring only routes reads. Answers are complete only when the data is
// placed by the same ring: package scatter/keyspace places the index of its
// query layer by keyspace, and its Placement gives the read ring. Over a
// pool that is not placed that way — today's publisher-sharded indexers,
// each holding the multihashes of its own publishers — a ring asks owners
// that never saw most of the answer, and their complete-looking answers
// are not complete.
//
// # Construction
//
// [NewGather] takes [GatherOption]s; an option given a value it cannot
// honour makes it fail with an error wrapping [ErrInvalidOption].
//
// # Lifecycle and concurrency
//
// Stopping a Find early cancels the requests still outstanding, and no
// call returns before every goroutine it started has exited. [Gather.Stats]
// snapshots the counters; hooks are called from the request goroutines.
// A Gather is safe for concurrent use, starts no goroutines of its own
// outside a request and holds nothing to close.
//
// # Errors
//
// Find errors are those of [find.Backend]: a [*find.PartialError] when not
// every backend answered, each backend's error naming it and wrapping
// [ErrBreakerOpen] or the context's error where that is the cause.
// Provider wraps [find.ErrNotFound] when no backend knows the provider.
package scatter
