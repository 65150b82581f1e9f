// Package routing serves the Delegated Routing V1 HTTP API (ipfs/specs,
// src/routing/http-routing-v1.md) over any [find.Backend]: a node's
// [find.StoreBackend], or a front end's scatter Gather. It is what Kubo,
// Helia, Rainbow and boxo-based gateways ask (boxo's routing/http/client),
// where IPNI clients ask the find API.
//
// # Routes
//
// [New] returns a [Handler] that serves under [Prefix] (mount it with
// mux.Handle(routing.Prefix, h)):
//
//   - GET /routing/v1/providers/{cid}: the providers of the CID's
//     multihash (any CID version, codec and multibase go-cid reads), one
//     Backend.Find per request. JSON {"Providers":[...]} by default, at
//     most [DefaultJSONLimit] providers ([WithJSONLimit]); with Accept:
//     application/x-ndjson, one record a line, each flushed as the backend
//     yields it.
//   - GET /routing/v1/peers/{peer-id}: the provider record of the peer (a
//     base58btc multihash, or a CIDv1 with the libp2p-key codec), one
//     Backend.Provider per request, as {"Peers":[...]} or one NDJSON line.
//     A provider record has no protocols, so Protocols is left out (the
//     spec's "unknown").
//   - PUT on /providers or /peers, and /ipns/..., /dht/...: 501, as the
//     spec says for what a server does not implement; other methods on the
//     lookups: 501 with Allow. Any other path under the prefix: 400.
//
// Every answer carries Access-Control-Allow-Origin: *; OPTIONS answers a
// CORS preflight with 204. HEAD is GET without the body.
//
// # Peer records
//
// Each find result becomes a peer schema record
//
//	{"Schema":"peer","ID":"12D3KooW…","Addrs":["/ip4/…"],"Protocols":["transport-bitswap",…],…}
//
// with the protocols of its IPNI metadata (decoded by ingest/metadata,
// which reads graphsync in any position):
//
//	code    Protocols entry                 extra field, named as the protocol
//	0x0900  transport-bitswap               none
//	0x0910  transport-graphsync-filecoinv1  {"PieceCID":"<cid>","VerifiedDeal":b,"FastRetrieval":b}
//	0x0920  transport-ipfs-gateway-http     none
//	0x0930  transport-filecoin-piece-http   none
//	other   go-multicodec's name of the     the payload as a base64 string, when not empty
//	        code ("Code(<n>)" when the
//	        registry has none, as indexstar)
//
// The extra fields are those the spec's peer schema allows ("protocol-b":
// {...}); the graphsync one carries the fields of the spec's legacy
// graphsync-filecoinv1 schema. Metadata that does not decode gives a
// record with no Protocols (unknown to the client, as the spec allows),
// never a dropped provider.
//
// Providers are de-duplicated per peer ID: one record carries the union of
// the addresses and protocols of every result of that peer (the same
// content under several contexts, or from several indexers), in the order
// the peers were first seen; for a protocol seen twice (two PieceCIDs),
// the first seen keeps its field. A JSON answer holds each peer once. A
// stream cannot wait for the union: it sends a peer when first seen, and
// sends it again, in full, only when a later result adds an address or a
// protocol; a client reading a stream should keep the last record of each
// ID. A stream never repeats an identical line.
//
// # Filters
//
// The spec's optional filter-addrs and filter-protocols (IPIP-484), given
// at most once each, case-insensitive, comma-separated:
//
//   - filter-addrs: multiaddr protocol names (tcp, quic-v1, tls, http,
//     ...), "!name" to exclude, "unknown" to keep providers without
//     addresses. An address is kept when none of its protocols is excluded
//     and, if any positive filter is given, one of them is included; a
//     provider left with no address is left out.
//   - filter-protocols: transfer protocol names; a provider is kept when
//     one of its Protocols is listed (it is then answered with all of
//     them), or, with "unknown", when it has none.
//
// An element that is not a multiaddr protocol name, a negated "unknown",
// a negated protocol name (the spec defines negation for addresses only),
// or a protocol name longer than 63 characters or not printable ASCII,
// gets 422 naming it. Other query parameters are ignored.
//
// # Status and caching
//
//   - 200 with the records found. When none is found (or the filters left
//     none), 200 with {"Providers":[]} (or an empty stream), as the spec
//     says since IPIP-513: a 404 "SHOULD NOT be returned" (clients read it
//     as no results).
//   - A complete JSON answer (every backend answered) is cacheable: with
//     records, Cache-Control: public, max-age=300, stale-while-revalidate=60,
//     stale-if-error=120 (indexstar's max-age, the spec's five minutes);
//     with none, max-age=15 (the spec's shorter not-found time), see
//     [WithMaxAge]. Vary: Accept.
//   - A partial answer — the lookup ended with a [*find.PartialError], or
//     any other error after some results — is never cacheable:
//     Cache-Control: no-store, and the [find.HeaderBackends] header says
//     "answered/total". When it leaves no record to send, the answer is
//     504 if every backend that did not answer timed out, else 502: never
//     a "no providers" that is not known to be true. Any other error with
//     nothing found is 500 (logged, [WithLogger]).
//   - A stream sends its header with its first line, before the lookup
//     has ended, so it cannot promise completeness: a stream with records
//     is Cache-Control: no-store, and a partial one says so in the
//     HeaderBackends trailer. A stream with no record waits for the end of
//     the lookup and is cached as a JSON answer with none. Caches and
//     CDNs that should keep answers should ask for JSON.
//   - Every 200 carries Last-Modified, the HTTP-date of the resolution
//     (now), as the spec's response headers ask, so that caches can
//     revalidate with If-Modified-Since.
//   - 422 with a text/plain message naming the problem when the request
//     does not conform to the spec's schema, the spec's status for
//     /providers and /peers: a malformed CID or peer ID, an unsupported
//     multibase, a CID or peer ID path longer than [MaxPathLen] bytes
//     after the prefix, a query longer than [MaxQueryLen], a bad filter.
//     Helia's client reports 422 as an InvalidRequestError (any other 4xx
//     as a bad response); boxo's quotes the message. 400 for a path the
//     API does not have (the spec's Error Codes). 406 when the Accept
//     header lists neither JSON nor NDJSON.
//
// # Lifecycle, concurrency and errors
//
// A Handler starts no goroutine outside a request and holds nothing to
// close; it keeps small bounded caches of decoded metadata and of each
// provider's JSON. It is safe for concurrent use. [New] fails with an
// error wrapping [ErrInvalidOption] for a nil backend or an invalid
// option.
package routing
