// Package sample serves the IPNI multihash-sampling API (ipni/specs
// IPNI_MH_SAMPLING.md, and the OpenAPI file of ipni/xedni) from a local
// store:
//
//	GET /ipni/v0/sample/{provider-id}/{context-id}?beacon=<hex>&max=<n>
//
// answers a deterministic sample of the multihashes that the provider
// advertised under the context ID: the same sample for the same beacon,
// at most max (1 to 10, default 1) multihashes.
//
// # Where the sample comes from
//
// The store indexes multihash → values and has no reverse index from a
// context to its multihashes; keeping one would double the writes of every
// Put. Instead a store that implements [store.Sampler] keeps, per
// (provider, context), a bottom-k sample of at most [store.SampleKeep]
// multihashes under a secret hash key (see store.Sampler): a few bytes per
// context and, once a context's sample is full, almost no work on Put. The
// handler then runs the spec's algorithm over that population: the
// multihashes sorted by their bytes, a PCG seeded from the beacon
// ([Seed]), indices drawn below the population size, repeats skipped
// ([Pick]). For a context of at most store.SampleKeep multihashes the
// population is the whole context, so the answer is the spec's exactly;
// for a larger one it is the spec's algorithm over a uniform random subset
// of SampleKeep multihashes that the provider cannot choose. Two indexers
// answer alike for small contexts; for larger ones each keeps its own
// subset (its key is its own).
//
// As the spec says, a sample is stable for a beacon while the context does
// not change; multihashes added to a small context, or entering the kept
// subset of a large one, change it.
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
//     none, as xedni does) comes back in [BeaconHeader]. With a beacon the
//     answer may be cached for a minute; without one it is no-store.
//   - 404 application/json {"error":...} for an unknown provider or context
//     ID, as the spec says (xedni answers 200 with an empty list).
//   - 400 text/plain naming the problem: a bad peer ID, bad base64, a
//     context ID over 64 bytes, a beacon that is not 1 to 32 bytes of hex,
//     max outside 1..10, a federation_epoch other than 0, a path over
//     [MaxPath] bytes.
//   - 501 application/json when the store keeps no samples (it does not
//     implement store.Sampler, or the context predates them).
//   - Every answer carries Access-Control-Allow-Origin: *; OPTIONS is a
//     CORS preflight (204); methods other than GET and HEAD get 405.
//
// The Handler is safe for concurrent use and holds nothing but the store.
// Mount it at [Prefix] ("/ipni/v0/sample/") of the find listener's mux,
// with the path unstripped.
package sample
