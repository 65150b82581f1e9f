package ipnisync

import (
	"errors"
	"net/http"

	"github.com/indexkit/indexkit/internal/httperr"
)

var (
	// ErrNoHead is returned by [Client.Head] when the publisher answers 204
	// No Content: it has published nothing yet.
	ErrNoHead = errors.New("ipnisync: publisher has no head")

	// ErrNotFound is returned by a [BlockSource] that does not hold a
	// block (the [Publisher] answers 404), and is wrapped by [Client]
	// errors for a 404 answer (see [StatusError]).
	ErrNotFound = errors.New("ipnisync: not found")

	// ErrHashMismatch is wrapped by [Client.Block] when the bytes served for
	// a CID do not hash to that CID's multihash. The message names the CID
	// and the URL.
	ErrHashMismatch = errors.New("ipnisync: hash mismatch")

	// ErrBlockTooLarge is wrapped when a response body (after gzip
	// decoding) is longer than the client's limit ([WithMaxBlockSize]).
	ErrBlockTooLarge = errors.New("ipnisync: block too large")

	// ErrMalformedHead is wrapped when a signed head document does not
	// decode: not JSON, a missing or mistyped field, a CID that does not
	// parse, bytes that are not base64.
	ErrMalformedHead = errors.New("ipnisync: malformed head")

	// ErrBadSignature is wrapped when a signed head's signature does not
	// verify with its public key, the key does not parse, or the key is not
	// the expected publisher's. The message names the peers involved.
	ErrBadSignature = errors.New("ipnisync: bad head signature")

	// ErrTimeout is wrapped when one request of a [Client] outlives its
	// per-request timeout ([WithTimeout]). The error also wraps
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("ipnisync: request timed out")
)

// StatusError is the error of a [Client] request answered with a status
// other than the ones the protocol expects (200, and 204 for the head): the
// one status error type of every indexkit HTTP client (admin.StatusError,
// handoff.StatusError and find.StatusError are the same type). Its Client
// is "ipnisync", and it wraps [ErrNotFound] when Code is 404 (nothing
// otherwise).
//
// It does not carry the answer's body: the publisher wrote it, and client
// errors end up in ingestion statuses and provider records served to
// anyone. The client logs the start of the body at DEBUG level.
type StatusError = httperr.StatusError

// newStatusError returns the StatusError of a GET of u answered with code.
func newStatusError(u string, code int) *StatusError {
	e := &StatusError{Client: "ipnisync", Method: http.MethodGet, URL: u, Code: code}
	if code == http.StatusNotFound {
		e.Err = ErrNotFound
	}
	return e
}
