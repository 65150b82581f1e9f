// Package sample serves the IPNI multihash-sampling API (ipni/specs
// IPNI_MH_SAMPLING.md, and the OpenAPI file of ipni/xedni) from an
// indexer's store, or on a front end from the indexers behind it:
//
//	GET /ipni/v0/sample/{provider-id}/{context-id}?beacon=<hex>&max=<n>
//
// answers a deterministic sample of the multihashes that the provider
// advertised under the context ID: the same sample for the same beacon,
// at most max (1 to 10, default 1) multihashes.
//
// # The answer
//
// The spec's algorithm: the provider's multihashes under the context,
// sorted by their bytes, and indices drawn below their count by a PCG
// seeded from the beacon ([Seed]), repeats skipped ([Pick]). A store that
// implements [store.Sampler] keeps each context's population (its whole
// set of multihashes, in step with the index, whatever order it was
// ingested in), so the answer is a function of the context and the beacon
// alone: every indexer that holds the context, whatever its backend and
// however it ingested it, answers a beacon alike, as the spec asks of
// federated indexers. [StoreSource] is that answer.
//
// As the spec says, a sample is stable for a beacon while the context does
// not change; multihashes added to or removed from the context change it.
//
// # Sources
//
// A [Handler] answers from any [Source]: [StoreSource] on an indexer
// ([NewHandler] is NewSourceHandler(StoreSource(s))); on a front end,
// [First] over a [Client] per indexer, which asks them all at once and
// answers with the first answer (any indexer that holds a context holds
// it whole and answers as any other would). A front end whose indexers
// are keyspace-sharded holds no context whole anywhere and serves
// [Unsampled] instead.
//
// # Wire
//
//   - The provider ID is a peer ID in any form (base58 or a CIDv1
//     libp2p-key). The context ID is base64: standard, as the spec says,
//     or URL-safe ('-', '_'), padded or not. A standard '/' may be sent raw
//     or as %2F and '+' raw or as %2B, but a '/' right after another '/'
//     (a context ID starting with '/', or "//" inside it) must be escaped:
//     Go's ServeMux merges "//" and redirects. Clients are best off
//     escaping every '/' (url.PathEscape does) or sending URL-safe base64.
//   - 200 application/json {"samples":[{"/":"<CID>"},...]} as in the
//     OpenAPI file, each CID a CIDv1 raw of a sampled multihash (the index
//     keeps no codecs). A stored context with no multihashes gives an empty
//     list. The beacon used (the request's, or a random one when there is
//     none, as xedni does) comes back in [BeaconHeader]; a front end sends
//     the one it drew to its indexers. With a beacon the answer may be
//     cached for a minute; without one it is no-store.
//   - Every other answer carries the spec's JSON error body, {"error":"..."}
//     (the OpenAPI file's error schema), naming the problem:
//   - 404 for an unknown provider or context ID, as the spec says (xedni
//     answers 200 with an empty list).
//   - 400 for a bad request: a bad peer ID, bad base64, a context ID over
//     64 bytes, a beacon that is not 1 to 32 bytes of hex, max outside
//     1..10, a federation_epoch other than 0, a path over [MaxPath] bytes.
//   - 501 when the context cannot be sampled here: the store keeps no
//     populations (it does not implement store.Sampler), or the context
//     predates them in a store that cannot rebuild them
//     ([store.ErrNotSampled]), or the front end's indexers hold no whole
//     contexts.
//   - On a front end, 502 when an indexer failed and none answered, 504
//     when those that failed all timed out: never a 404 that is not known.
//   - Every answer carries Access-Control-Allow-Origin: *; OPTIONS is a
//     CORS preflight (204); methods other than GET and HEAD get 405.
//
// The Handler, the Sources and the Client are safe for concurrent use; they
// start no goroutine outside a call, and First returns only after every
// request it started has ended. Mount the Handler at [Prefix]
// ("/ipni/v0/sample/") of the find listener's mux, with the path
// unstripped.
package sample
