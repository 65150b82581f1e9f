package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/indexkit/indexkit/freeze"

	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/httperr"
)

// The sentinels of the admin contract. A [Node] returns them (wrapped or
// not); the handler answers each with its status code, a fixed text body
// and the [ErrorHeader] code; the [Client] turns the answer back into the
// same sentinel, so errors.Is works across the wire. See the table in the
// package documentation.
var (
	// ErrAlreadyAssigned: the publisher is already assigned to the node
	// (assign, handoff). 400, as the reference.
	ErrAlreadyAssigned = errors.New("admin: publisher already assigned to this indexer")

	// ErrNotAssigned: unassign of a publisher that was not assigned. 404
	// "peer was not assigned", as the reference.
	ErrNotAssigned = errors.New("admin: peer was not assigned")

	// ErrNotAllowed: the node's policy rejects the publisher. 403.
	ErrNotAllowed = errors.New("admin: publisher not allowed by policy")

	// ErrNoAssigner: the node does not work with an assigner. 503.
	ErrNoAssigner = errors.New("admin: not configured to work with assigner service")

	// ErrUnavailable: the node cannot answer now (starting, shutting down,
	// its store unavailable, the request's context ended). 503.
	ErrUnavailable = errors.New("admin: indexer unavailable")

	// ErrFrozen: the node is frozen and takes no new publisher (assign,
	// handoff). 500 with the body "indexer is frozen": the reference
	// answers 500 with an empty body; the status is kept, the body names
	// the problem.
	ErrFrozen = errors.New("admin: indexer is frozen")

	// ErrDisabled: PUT /freeze on a node whose freezing is disabled. 400
	// "freezing disabled", as the reference. It is freeze.ErrDisabled, so
	// a node returns its freezer's error as it is.
	ErrDisabled = freeze.ErrDisabled

	// ErrSyncing: POST /ingest/sync/{id} while a sync of that publisher is
	// still running. 409, as the reference.
	ErrSyncing = errors.New("admin: publisher already has a sync in progress")

	// ErrUnknownPublisher: a handoff of a publisher the frozen node has no
	// provider for. 404; the reference answers 200 and leaves the
	// publisher orphaned.
	ErrUnknownPublisher = errors.New("admin: frozen indexer has no provider for publisher")

	// ErrUnknownIndexer: a handoff naming a FrozenURL that is not one of
	// the frozen indexers the node accepts handoffs from. 403, code
	// "unknown-indexer"; nothing was fetched. (The reference accepts any.)
	ErrUnknownIndexer = errors.New("admin: frozen indexer not among those accepted")

	// ErrBadFrozenAt: a handoff whose frozen indexer reports a FrozenAt
	// that is not an advertisement of the publisher (the publisher does
	// not serve it, or its signature or provider do not check out). 422,
	// code "bad-frozen-at"; nothing changed. (The reference does not
	// check.)
	ErrBadFrozenAt = errors.New("admin: FrozenAt is not an advertisement of the publisher")

	// ErrUpstream: the request failed because a server it depends on
	// failed: in a handoff, the frozen indexer (unreachable, an error
	// status, an answer that does not decode or is too large) or the
	// publisher whose FrozenAt must be checked. 502 Bad Gateway, code
	// "upstream", with the error's text as the body: it names the server
	// and what went wrong, never what the server wrote. The caller's
	// mistakes stay 4xx and the node's own failures 500. (The reference
	// answers 500.)
	ErrUpstream = errors.New("admin: a server the request depends on failed")

	// ErrNotSupported: the route's optional capability ([Freezer],
	// [Syncer], [IngestReporter]) is not implemented by the node. 501.
	ErrNotSupported = errors.New("admin: not supported by this indexer")

	// ErrUnauthorized: the handler requires a bearer token and the request
	// has none or a wrong one. 401.
	ErrUnauthorized = errors.New("admin: missing or wrong bearer token")

	// ErrNotLocal: a handler without a token refused the request because
	// its Host is not a loopback address, localhost or a name given with
	// [WithAllowedHosts] (421: a DNS-rebound page, or a proxy's name), or
	// because a web page sent it (403: an Origin header, or a
	// Sec-Fetch-Site other than "none"). The body names the problem.
	ErrNotLocal = errors.New("admin: request refused: not to a loopback Host or sent by a web page, and no token is set")

	// ErrBadRequest: the handler rejected the request itself: a bad peer
	// ID in the path, a bad body or query, a body over the limit (400,
	// 413). The Client's own requests are well formed, so against a
	// conforming handler it sees this only through a bug or a proxy.
	ErrBadRequest = errors.New("admin: bad request")
)

// ErrInvalidOption is wrapped by the error of [NewHandler] and [NewClient]
// when an option is given a value out of range; the message names the
// option. It is not part of the wire contract.
var ErrInvalidOption = errkind.New(errkind.InvalidOption, "admin: invalid option")

// ErrorHeader is the response header in which the handler names the
// sentinel behind an error answer ("already-assigned", "frozen", ...).
// The status codes are the reference's and several sentinels share one;
// the header tells them apart. The reference sends no such header; the
// Client then maps by route and status as the reference means them.
const ErrorHeader = "Indexkit-Error"

// wireError is one row of the error contract.
type wireError struct {
	err    error
	status int
	code   string // ErrorHeader value
	body   string // fixed text body; "": the error's text
}

// wireErrors is the error contract, in match order.
var wireErrors = []wireError{
	{ErrFrozen, http.StatusInternalServerError, "frozen", "indexer is frozen"},
	{ErrAlreadyAssigned, http.StatusBadRequest, "already-assigned", "publisher already assigned to this indexer"},
	{ErrNotAssigned, http.StatusNotFound, "not-assigned", "peer was not assigned"},
	{ErrNotAllowed, http.StatusForbidden, "not-allowed", "publisher not allowed by policy"},
	{ErrNoAssigner, http.StatusServiceUnavailable, "no-assigner", "not configured to work with assigner service"},
	{ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "indexer unavailable"},
	{ErrDisabled, http.StatusBadRequest, "disabled", "freezing disabled"},
	{ErrSyncing, http.StatusConflict, "syncing", "publisher already has a sync in progress"},
	{ErrUnknownPublisher, http.StatusNotFound, "unknown-publisher", "frozen indexer has no provider for publisher"},
	{ErrUnknownIndexer, http.StatusForbidden, "unknown-indexer", "frozen indexer not among those accepted"},
	{ErrBadFrozenAt, http.StatusUnprocessableEntity, "bad-frozen-at", "FrozenAt is not an advertisement of the publisher"},
	{ErrUpstream, http.StatusBadGateway, "upstream", ""},
	{ErrNotSupported, http.StatusNotImplemented, "not-supported", "not supported by this indexer"},
	{ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token"},
	{ErrNotLocal, http.StatusMisdirectedRequest, codeNotLocal, "request refused: not to a loopback Host or sent by a web page, and no token is set"},
	{ErrBadRequest, http.StatusBadRequest, "bad-request", "bad request"},
}

// codeInternal marks an error that is none of the sentinels (500).
const codeInternal = "internal"

// codeNotLocal is the ErrorHeader code of [ErrNotLocal], which the handler
// answers with the refusal's own status and text (421 or 403).
const codeNotLocal = "not-local"

// wireFor returns the row for err; ok is false for an error that is none
// of the sentinels. An ended context counts as ErrUnavailable.
func wireFor(err error) (wireError, bool) {
	for _, w := range wireErrors {
		if errors.Is(err, w.err) {
			return w, true
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return wireFor(ErrUnavailable)
	}
	return wireError{}, false
}

// sentinelForCode returns the sentinel an ErrorHeader code names, or nil.
func sentinelForCode(code string) error {
	for _, w := range wireErrors {
		if w.code == code {
			return w.err
		}
	}
	return nil
}

// StatusError is the error of a [Client] call the node answered with an
// unexpected status: the one status error type of every indexkit HTTP
// client (handoff.StatusError, ipnisync.StatusError and find.StatusError
// are the same type). Its Client is "admin", Body the start of the
// answer's body, and it wraps the sentinel the answer stands for, if any,
// so callers test it with errors.Is; errors.As gives the details.
type StatusError = httperr.StatusError
