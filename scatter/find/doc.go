// Package find is the IPNI find HTTP API in one place: its wire model, the
// handler that serves it over any [Backend], the HTTP [Client] that queries
// it (and is itself a Backend), and the [StoreBackend] that answers from a
// local store. scatter fans a find out over many Backends; handoff and
// piece read the /providers model of this package.
//
// # Model
//
// The JSON types ([FindResponse], [MultihashResult], [ProviderResult],
// [ProviderInfo], [ExtendedProviders]) are those of the deployed reference
// (go-libipni find/model), field for field: byte fields are padded standard
// base64, CIDs are {"/": "..."} and an undefined CID is null, peer IDs are
// strings, times are RFC 3339 strings left out when unknown. [ProviderInfo]
// is the element of GET /providers and the body of GET /providers/{id},
// FrozenAt and FrozenAtTime included (a frozen indexer's resume point, which
// handoff reads); [ProviderRecords] reads a /providers answer one record at
// a time.
//
// A [Backend] answers three questions: Find (the results for one
// multihash, yielded as they become available), Providers and Provider. It
// says "not found" by yielding nothing and no error; an error means it could
// not answer. When only some of the backends behind it answered (a fan-out
// such as scatter's Gather), it ends with a [*PartialError].
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
//     answering one MultihashResult per multihash found. A backend that is
//     a [BatchFinder] gets the whole batch in one call (a [Client] sends
//     it on in one POST, scatter's Gather with a ring splits it by owner);
//     any other is asked one multihash at a time ([FindEach]).
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
//     with nothing found is 500 (and logged, see [WithLogger]).
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
// multihash become results with the provider's addresses from its record,
// and extended providers are expanded as the reference does (see
// [StoreBackend.Find]). A value whose provider has no record (nobody called
// store.Store's PutProvider for it) is answered with the provider's ID and
// no addresses, where the reference drops it: an IPNI answer always carries
// a Provider with an ID, and indexed content does not vanish. Provider
// records read for Find are cached: over a [store.Versioned] store
// (store/pebble, store/leveldb) until a write changes what an answer shows
// of them, otherwise briefly ([WithProviderTTL]).
//
// Over such a store, a Handler also keeps JSON answers of single lookups
// ready ([WithAnswerCache]) and serves one again, without parsing the key,
// reading the store or encoding, while the versions of everything it was
// built from are current: the multihash's index entries, their records and
// the providers' addresses. The cache is exact, not a TTL: once a write
// that could change an answer has landed, the answer is not served again.
// [ProviderInfoFromStore] converts a stored record to the API shape.
//
// [NewClient] queries any IPNI find API (an indexkit [Handler], a
// storetheindex indexer, indexstar): it asks for NDJSON and reads either
// NDJSON (line by line as it arrives) or JSON, takes 404 as "not found" and
// any other status as a [*StatusError] naming the URL and status. Its
// FindBatch sends a batch as POST /multihash and takes a 200 the remote
// marks incomplete as an [*IncompleteError] for each multihash.
// Deadlines come from the context of each call.
//
// # Construction
//
// Each constructor takes its own option type ([HandlerOption],
// [ClientOption], [StoreBackendOption]); an option given a value it cannot
// honour (a nil logger or client, a limit below 1) makes the constructor
// fail with an error wrapping [ErrInvalidOption]. Defaults are the Default
// constants of this package.
//
// # Lifecycle and concurrency
//
// Handlers and backends start no goroutines outside a request and hold no
// resource to close: a StoreBackend does not own its store (closing it is
// the caller's job), and a Client's connections belong to its http.Client.
// All of them are safe for concurrent use. Stopping a Find early (breaking
// out of the range) cancels the request behind it.
//
// # Errors
//
// A Find yields an error once, last, when it could not answer; "not found"
// is no error. Provider wraps [ErrNotFound] for an unknown provider. A
// fan-out's partial answer is a [*PartialError]. Client errors wrap the
// context's error when the context ended, and an unexpected status is a
// [*StatusError] (the one type every indexkit HTTP client returns).
package find
