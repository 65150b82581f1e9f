// Package httperr holds the one error type every indexkit HTTP client
// returns for an answer with an unexpected status. The public client
// packages (assigner/admin, handoff, ingest/ipnisync, scatter/find) expose
// it as a type alias, StatusError, so that errors.As with any of them
// matches the error of every client.
//
// It imports the standard library only.
package httperr

import (
	"fmt"
	"net/http"
)

// StatusError is the error of an HTTP request answered with a status the
// client did not expect. It unwraps to the sentinel the answer stands for,
// when the client knows one, so callers test it with errors.Is; errors.As
// gives the details.
type StatusError struct {
	// Client names the package that made the request ("admin",
	// "ipnisync", "find"); it is the first word of the message, left out
	// when empty (when the error is wrapped under a message of its own).
	Client string
	Method string // the request method
	URL    string // the request URL, userinfo redacted
	Code   int    // the HTTP status code
	// Body is the start of the answer's body, trimmed, for clients that
	// quote it; empty for those that must not (ipnisync: a publisher
	// wrote it).
	Body string
	// Err is the sentinel the answer stands for, or nil.
	Err error
}

// Error returns "client: METHOD URL: code text[: body]".
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
	if e.Client != "" {
		msg = e.Client + ": " + msg
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Unwrap returns the sentinel the answer stands for, or nil.
func (e *StatusError) Unwrap() error { return e.Err }
