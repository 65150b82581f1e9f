// Package scatter is the query side of an indexer: the IPNI find HTTP API,
// served over any [Backend], and the backends behind it — one local store,
// a remote find API, or a fan-out over many of them.
//
// # Model
//
// The JSON types ([FindResponse], [MultihashResult], [ProviderResult],
// [ProviderInfo], [ExtendedProviders]) are those of the deployed reference
// (go-libipni find/model), field for field: byte fields are padded standard
// base64, CIDs are {"/": "..."} and an undefined CID is null, peer IDs are
// strings, times are RFC 3339 strings left out when unknown.
//
// A [Backend] answers three questions: Find (the results for one
// multihash, yielded as they become available), Providers and Provider. It
// says "not found" by yielding nothing and no error; an error means it could
// not answer. When only some of the backends behind it answered, it ends
// with a [*PartialError].
//
// # Find API
//
// [NewHandler] serves, at the root of its mux (use [http.StripPrefix] to
// mount it elsewhere):
//
//   - GET /multihash/{b58|hex} and GET /cid/{cid} (any CID version, codec
//     and multibase; the lookup is by its multihash). JSON FindResponse by
//     default; with Accept: application/x-ndjson, one ProviderResult JSON
//     object per line, each line flushed as the backend yields it. Each
//     line moves the write deadline ([WithStreamWriteTimeout]), so that a
//     server's WriteTimeout bounds a stalled client, not a long stream.
//   - POST /multihash with {"Multihashes":["<base64>",...]}: a batch
//     lookup, bounded by [WithBatchLimit] and [WithBodyLimit] (413 beyond),
//     answering one MultihashResult per multihash found.
//   - GET /providers (a JSON array, [] when empty) and GET
//     /providers/{peerID}.
//
// Every answer carries Access-Control-Allow-Origin: *; OPTIONS answers a
// CORS preflight with 204; HEAD is GET without the body; other methods get
// 405 with Allow.
//
// # Status rules
//
//   - 200: at least one result.
//   - 404 text/plain "no results for query": the backend answered and found
//     nothing. "provider not found" for an unknown provider.
//   - 400: a bad multihash, CID or peer ID (the message names the problem),
//     or a bad batch body.
//   - 406: the Accept header lists only types the route cannot produce (a
//     missing Accept header means JSON; NDJSON is offered on the GET find
//     routes only).
//   - A backend error is never turned into 404. When the lookup ends with a
//     *PartialError and nothing was found, the answer is 504 if every
//     backend that did not answer timed out (TimedOut == Total-Answered),
//     else 502, with a body saying how many backends failed. Any other error
//     with nothing found is 500 (and logged, see [WithHandlerLogger]).
//   - When the error is partial, the [HeaderBackends] header says
//     "answered/total". Results served after a failure (partial or not)
//     are marked Cache-Control: no-store, so a cache does not keep an
//     incomplete answer. Complete answers carry no Cache-Control: caching
//     them is the operator's choice.
//   - An NDJSON stream has sent its 200 with the first line. A later
//     *PartialError is reported in the HeaderBackends trailer (declared up
//     front); any other error ends the stream early and is logged. Clients
//     and caches that must tell a complete answer from a partial one should
//     use JSON or read the trailer.
//
// # Backends
//
// [NewStoreBackend] answers from a local [store.Store]: the values of a
// multihash become results with the provider's addresses from its record;
// values of providers without a record are dropped, and extended providers
// are expanded as the reference does (see [StoreBackend.Find]). Provider
// records read for Find are cached briefly ([WithProviderTTL]).
// [ProviderInfoFromStore] converts a stored record to the API shape.
//
// [NewHTTPBackend] queries any IPNI find API (an indexkit [Handler], a
// storetheindex indexer, indexstar): it asks for NDJSON and reads either
// NDJSON (line by line as it arrives) or JSON, takes 404 as "not found" and
// any other failure as an error naming the URL and status. Deadlines come
// from the context of each call.
//
// # Gather
//
// [NewGather] fans each request out to many backends at once — a pool of
// indexers, each behind an [HTTPBackend] — and is itself a Backend, so a
// [Handler] serves it like any other (and a Gather can sit behind another).
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
//     (results or "not found"); otherwise with a [*PartialError] saying how
//     many answered and how many timed out, joining the others' errors. A
//     Handler turns that into the HeaderBackends header, or 502/504 when
//     nothing was found — never a false 404.
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
// Stopping a Find early cancels the requests still outstanding, and no
// call returns before every goroutine it started has exited. [Gather.Stats]
// snapshots the counters; hooks are called from the request goroutines.
//
// All handlers and backends of this package are safe for concurrent use and
// start no goroutines of their own outside a request.
package scatter
