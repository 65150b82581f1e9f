// Package web is the front end's page for people and the JSON status it
// reads: [Page] serves one self-contained HTML document (its CSS and
// vanilla JavaScript inline, embedded in the binary with embed: no CDN,
// no build step), and [Status] serves GET /status.json, a [Report] on the
// front end and its pool. The front end (examples/scatternode) mounts
// both beside its find API, on the same listener:
//
//	mux.Handle("/{$}", web.Page())
//	mux.Handle("/status.json", status) // status, _ := web.NewStatus(local, web.WithAssigner(url))
//
// # The page
//
// A search box looks a CID or a multihash up through the front end's own
// find API: GET /cid/{q} first, GET /multihash/{q} when that says 400.
// The answer shows each provider (grouped by peer ID) with its protocols,
// decoded from the metadata's multicodec prefixes (transport-bitswap
// 0x0900, transport-graphsync-filecoinv1 0x0910,
// transport-ipfs-gateway-http 0x0920, transport-filecoin-piece-http
// 0x0930, unknown codes as unknown-0x…), its addresses and its number of
// contexts, and says whether the answer is complete or partial, by the
// find API's status rules (scatter/find: the X-IPNI-Backends header
// "answered/total" and Cache-Control: no-store mark a partial answer; 404
// is "every backend answered, none has it"; 502 and 504 name the backends
// that failed). A link to #q=<query> repeats the lookup.
//
// The pool view polls /status.json every two seconds: the indexers with
// their state (active, frozen, unknown, down), the front end's circuit
// breaker for each, their multihash and provider counts; when the status
// has an assigner, the publishers with the indexers holding them (frozen
// ones marked, and the frozen indexer a holder took over from), and the
// handoffs in progress. A chart drawn on a canvas shows the ingest rate
// (the change of the indexers' summed multihash count per second) and the
// lookups per second over the last three minutes, computed from
// successive reports.
//
// Everything taken from the network enters the page as text
// (textContent), never as HTML. The page is served with a
// Content-Security-Policy that lets it load nothing from elsewhere.
//
// # The status
//
// A [Status] reads [Local] (the front end's backends, breaker states and
// lookup counters) at each request, and makes at most one round of
// requests to the backends per max age ([DefaultMaxAge], one second):
// GET /health ({"Status":"ok","State":"active"|"frozen","ID":…}) and GET
// /stats ({"EntriesCount":n,"EntriesEstimate":n,"EntriesExact":b,"Providers":n}) of every
// backend, and, with [WithAssigner], GET /indexers and GET /assignments
// of the assigner's state API. Requests that arrive while a round runs
// wait for it and share it; a round is bounded by [WithRoundTimeout]. A
// backend that answers 404 or 405 for /health is in [StateUnknown], one
// that does not answer in [StateDown]; [Indexer.Error] says why. A
// backend's count is exact when its /stats says EntriesExact
// ([Indexer.EntriesExact]; the sum's [Report.EntriesExact] when all are),
// and the page shows any other as "about" it.
//
// Both handlers answer GET and HEAD, OPTIONS with 204 (a CORS preflight)
// and other methods with 405; every answer carries
// Access-Control-Allow-Origin: *.
//
// # Lifecycle and concurrency
//
// [Page] and [NewStatus] start nothing; a Status dials only inside a
// request and holds nothing to close (its connections belong to its
// http.Client). Both are safe for concurrent use.
//
// # Errors
//
// [NewStatus] wraps [ErrInvalidOption]. A backend or assigner that fails
// is not an error of the report: it shows in the report's Error fields.
package web
