// Package httperr holds the one error type every indexkit HTTP client
// returns for an answer with an unexpected status. The public client
// packages (ingest/admin, handoff, ingest/ipnisync, scatter/find) expose
// it as a type alias, StatusError, so that errors.As with any of them
// matches the error of every client.
//
// It also says how an error quotes an answer: [Snippet] gives the start of
// a body on one line, bounded, for the answers of configured peers
// ([DecodeError]); [JSONError] quotes nothing, for the answers of peers
// someone else named.
//
// It imports the standard library only.
package httperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
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

// SnippetLen is the most bytes of an answer's body [Snippet] keeps.
const SnippetLen = 200

// Snippet returns the start of an answer's body b fit to quote on one line
// of an error or a log: invalid UTF-8 and control characters (line breaks
// and tabs included) become spaces, runs of spaces collapse into one, the
// ends are trimmed, and the rest is cut to at most [SnippetLen] bytes at a
// character boundary, "..." marking the cut. Only the first 4×SnippetLen
// bytes of b are looked at, so b may be a whole answer.
func Snippet(b []byte) string {
	cut := len(b) > 4*SnippetLen
	if cut {
		b = b[:4*SnippetLen]
	}
	var sb strings.Builder
	space := false
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) {
			space = sb.Len() > 0
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		if sb.Len()+utf8.RuneLen(r) > SnippetLen {
			cut = true
			break
		}
		sb.WriteRune(r)
	}
	if cut {
		sb.WriteString("...")
	}
	return sb.String()
}

// DecodeError returns err, the error of decoding an answer whose body
// starts with body, with that start quoted ([Snippet]): encoding/json's
// errors show one character of the input at most ("invalid character '<'
// looking for beginning of value"), which does not tell an HTML error page
// from a truncated answer. For answers of a configured peer (a backend, an
// indexer); an answer from a peer someone else named gets [JSONError].
func DecodeError(err error, body []byte) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w; the answer starts %q", err, Snippet(body))
}

// JSONError returns err, an error of encoding/json, rewritten so that it
// quotes nothing of the input, for answers of a peer that someone else
// named (a publisher, a frozen indexer from an admin request), whose text
// must not reach an error that is shown to anyone: a *json.SyntaxError
// loses the character it quotes, a *json.UnmarshalTypeError the literal
// ("number 123...", which can be as long as the input). Both keep the
// offset, and stay in the chain for errors.As. Any other error is
// returned as it is.
func JSONError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return &jsonError{fmt.Sprintf("invalid JSON at byte offset %d", se.Offset), err}
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		kind, _, _ := strings.Cut(te.Value, " ")
		where := ""
		if te.Field != "" {
			where = " (field " + te.Field + ")"
		}
		return &jsonError{fmt.Sprintf("cannot decode a JSON %s into %v%s at byte offset %d", kind, te.Type, where, te.Offset), err}
	}
	return err
}

// jsonError is a JSONError: its own message over the original error.
type jsonError struct {
	msg string
	err error
}

func (e *jsonError) Error() string { return e.msg }
func (e *jsonError) Unwrap() error { return e.err }
