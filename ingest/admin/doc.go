// Package admin is the contract between the assigner and an indexer: the
// indexer's admin HTTP API, as the reference (storetheindex) serves it and
// the reference assigner calls it. [NewHandler] serves a [Node] (the
// indexer binary implements it over ingest, freeze and handoff); [Client]
// calls it, from the assigner. The package imports nothing of indexkit.
//
// # Routes
//
// Bodies are JSON (Content-Type "application/json; charset=utf-8"); peer
// IDs are their string form ("12D3…"); error answers are text/plain with
// the [ErrorHeader] code. Unless noted, the status codes and bodies are the
// reference's.
//
//	POST /ingest/assign/{id}    200 empty
//	                            400 ErrAlreadyAssigned  403 ErrNotAllowed
//	                            503 ErrNoAssigner       500 ErrFrozen "indexer is frozen" (1)
//	PUT  /ingest/unassign/{id}  200 empty; 404 ErrNotAssigned "peer was not assigned"; 503
//	GET  /ingest/assigned       200 [{"Publisher":"12D3…","Continued":"12D3…"}]
//	                            (Continued omitted when empty); 204 when none
//	GET  /ingest/preferred      200 ["12D3…"]; 204 when none
//	POST /ingest/handoff/{id}   body {"FrozenID":"12D3…","FrozenURL":"http://…"},
//	                            any Content-Type or none (the reference assigner sends none)
//	                            200 empty; 400 missing or bad body, ErrAlreadyAssigned
//	                            403; 503; 500 ErrFrozen (2); 404 ErrUnknownPublisher (3)
//	                            403 ErrUnknownIndexer, 422 ErrBadFrozenAt (4)
//	                            502 ErrUpstream (6)
//	GET  /status                200 {"Frozen":false,"ID":"12D3…","Usage":42.5} (Usage −1: unknown)
//	PUT  /freeze                200 (also when already frozen); 400 ErrDisabled "freezing disabled"
//	POST /ingest/sync/{id}?depth=&resync=
//	                            optional body: a JSON string holding a multiaddr
//	                            202 (the sync runs in the background); 409 ErrSyncing
//	GET  /ingest/status?limit=N&after=ID
//	                            200 [PublisherStatus…] sorted by publisher, one page (5);
//	                            204 when none (indexkit's, not the reference's)
//
// Common to every route: 400 naming a bad or missing peer ID in the path
// or a bad query or body ([ErrBadRequest]); 413 for a request body over
// the limit ([WithMaxRequestBody], default 8 KiB); 405 with Allow for
// another method (OPTIONS: 200 with Allow, as the reference); 404 for
// another path; 401 without the bearer token when [WithToken] is set
// ([ErrUnauthorized]); without a token, 421 for a Host that is not
// loopback and 403 for a request a web page sent ([ErrNotLocal], see
// Security); 501 for an optional capability the Node lacks
// ([ErrNotSupported]); 503 [ErrUnavailable], also when the request's
// context ends; 500 with the error's text for any other error.
//
// Where indexkit departs from the reference, the status stays one the
// reference assigner treats as a failure (it treats every non-2xx so):
//
//  1. Assign on a frozen node: the reference answers 500 with an empty
//     body. indexkit keeps 500 (a frozen node refuses for as long as it is
//     frozen, so 503, "retry later", would mislead) and names the problem
//     in the body and the code "frozen".
//  2. Handoff to a frozen node: the reference accepts it. indexkit refuses
//     it as it refuses an assign.
//  3. Handoff of a publisher the frozen node has no provider for: the
//     reference answers 200 without assigning, leaving the publisher
//     orphaned. indexkit answers 404 "frozen indexer has no provider for
//     publisher", code "unknown-publisher", so the assigner tries again or
//     assigns the publisher afresh.
//  4. Handoff checks the reference does not make: the FrozenURL must be
//     one of the frozen indexers the node accepts handoffs from (403
//     "unknown-indexer"), and each FrozenAt the frozen indexer reports
//     must be an advertisement the publisher serves, signed by the
//     publisher or its provider, of a provider the frozen indexer lists
//     (422 "bad-frozen-at"). A publisher that cannot be reached for that
//     check fails the handoff with 502 (see 6).
//  5. GET /ingest/status is paginated. The answer is a JSON array as
//     before, sorted by the publisher's peer ID string, of at most limit
//     entries (default [DefaultIngestStatusLimit], at most
//     [MaxIngestStatusLimit]) that sort after the publisher after (which
//     need not be known to the node). When entries follow, the answer
//     has the header `Link: <?after=ID&limit=N>; rel="next"`, ID being
//     the last publisher of the page: a query-only reference to the same
//     path (RFC 3986, 5.2), valid wherever the handler is mounted. A client that ignores it gets the
//     first page, as an array it already decodes; [Client.IngestStatus]
//     follows the links. A bad limit or after is 400 naming it.
//  6. A handoff that fails because the frozen indexer failed (unreachable,
//     an error status, an answer that does not decode or is too large) or
//     the publisher cannot be reached to check a FrozenAt: the reference
//     answers 500; indexkit answers 502 Bad Gateway with the error's text,
//     code "upstream" ([ErrUpstream]), keeping 500 for its own failures.
//     The reference assigner treats both as a failure.
//
// The reference routes not listed (GET /ingest/sync/, /importproviders,
// /ingest/allow, /ingest/block, /markadprocessed, /reloadconfig, /config,
// /healthcheck, /telemetry, /metrics, /debug/pprof) are not served here
// (404; GET /ingest/sync/ gets 405, the path taking POST only); a binary
// may mount its own beside this handler.
//
// # Sentinels across the wire
//
// A [Node] reports the conditions above with the package's sentinels; the
// handler answers each with its status, a fixed body and an [ErrorHeader]
// code; the [Client] returns a *[StatusError] that wraps the same sentinel,
// so errors.Is works on both sides of the wire:
//
//	sentinel              status  code               body
//	ErrAlreadyAssigned    400     already-assigned   publisher already assigned to this indexer
//	ErrNotAssigned        404     not-assigned       peer was not assigned
//	ErrNotAllowed         403     not-allowed        publisher not allowed by policy
//	ErrNoAssigner         503     no-assigner        not configured to work with assigner service
//	ErrUnavailable        503     unavailable        indexer unavailable
//	ErrFrozen             500     frozen             indexer is frozen
//	ErrDisabled           400     disabled           freezing disabled
//	ErrSyncing            409     syncing            publisher already has a sync in progress
//	ErrUnknownPublisher   404     unknown-publisher  frozen indexer has no provider for publisher
//	ErrUnknownIndexer     403     unknown-indexer    frozen indexer not among those accepted
//	ErrBadFrozenAt        422     bad-frozen-at      FrozenAt is not an advertisement of the publisher
//	ErrUpstream           502     upstream           (the error's text)
//	ErrNotSupported       501     not-supported      not supported by this indexer
//	ErrUnauthorized       401     unauthorized       missing or wrong bearer token
//	ErrNotLocal           421/403 not-local          (what was wrong: the Host, or the Origin)
//	ErrBadRequest         400/413 bad-request        (what was wrong)
//
// The body is fixed so the wire contract does not depend on how a Node
// wraps its errors (but for ErrUpstream, whose text says which server
// failed and how); the handler logs the full error. Against a node that
// sends no code (a reference indexer), the Client maps by route and
// status: 400 on assign or handoff is ErrAlreadyAssigned, 404 on unassign
// ErrNotAssigned, 400 on freeze ErrDisabled, 409 on sync ErrSyncing, 503 on
// assign, unassign or handoff ErrNoAssigner and elsewhere ErrUnavailable,
// 403 ErrNotAllowed, 401 ErrUnauthorized; a reference node's 500 on
// assign cannot be told from other failures and wraps no sentinel.
//
// [NewHandler] and [NewClient] wrap [ErrInvalidOption] for an option given
// a value out of range (a nil logger or client, a body limit ≤ 0); that
// sentinel never crosses the wire.
//
// # What the reference assigner does
//
// At startup, for each indexer: GET /ingest/assigned, GET /status, and GET
// /ingest/preferred unless the node is frozen. To assign a publisher: POST
// /ingest/assign/{id}, then PUT /ingest/announce on the node's ingest
// listener (not this handler) with the announce that triggered the
// assignment, a CBOR body with Content-Type application/octet-stream,
// which the ingest/announce receiver serves. Each poll: GET /status. For
// each publisher of a frozen node: POST /ingest/handoff/{id} with a JSON
// body and no Content-Type, after which the receiving node reads GET
// {FrozenURL}/providers from the frozen node's find API.
//
// # Security
//
// The reference has no authentication and assumes a private network. An
// indexer binary should serve this handler on loopback
// ([DefaultListenAddr], 127.0.0.1:3002) unless configured otherwise, and
// must set [WithToken] (with [WithClientToken] on the assigner) when it
// listens elsewhere: examples/indexer refuses to start otherwise. The
// token is compared in constant time (both sides hashed with SHA-256,
// then crypto/subtle), so neither its content nor its length leaks
// through timing.
//
// Loopback keeps other machines out, not the web pages of a browser on
// this one. So a handler without a token answers only requests whose Host
// is a loopback address (127.0.0.0/8, [::1]), localhost or a name given
// with [WithAllowedHosts] (the indexer's -admin-hosts), and that carry no
// Origin header and no Sec-Fetch-Site other than "none". A page whose
// name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its own
// name as Host and gets 421 Misdirected Request: the node does not answer
// for that name; a page at any other origin, whose no-cors POST the
// browser sends without asking, gets 403. Both carry the code
// "not-local" ([ErrNotLocal]) and a body naming the Host or Origin and
// the way out. The assigner and curl send neither header. With a token
// the Host and Origin are not checked: a page cannot send the token (a
// no-cors request has no Authorization header, and the handler grants no
// CORS preflight), and a node with a token may be reached under any name. The token authenticates the assigner only; which
// frozen indexers a handoff may name is the node's own configuration
// (handoff.WithFrozenIndexers). Request bodies are
// bounded ([WithMaxRequestBody]), response bodies read by the Client too
// ([WithMaxResponseBody]).
//
// # Lifecycle and concurrency
//
// Neither the handler nor the Client starts goroutines or holds resources:
// there is nothing to Run or Close. Both are safe for concurrent use; the
// handler calls the Node concurrently, once per request, with the
// request's context. [Syncer.Sync] must start the sync and return without
// waiting for it.
package admin
