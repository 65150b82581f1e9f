package find

import (
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/httperr"
)

var (
	// ErrNotFound is wrapped by Provider errors for an unknown provider.
	ErrNotFound = errors.New("find: not found")

	// ErrInvalidOption is wrapped by constructor errors for an invalid
	// argument or option.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "find: invalid option")
)

// PartialError is what a Backend's Find (a fan-out over many backends, such
// as scatter's Gather) yields last when not every backend behind it
// answered: some failed or ran out of time. The results yielded before it
// are real, but may not be all there is, so a handler must not let a cache
// keep a "not found" built on them.
type PartialError struct {
	// Answered is how many backends answered (with results or "not
	// found"), out of Total asked; TimedOut of the others ran out of time.
	Answered, Total, TimedOut int
	// Err joins the errors of the backends that did not answer.
	Err error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("find: %d of %d backends answered (%d timed out): %v", e.Answered, e.Total, e.TimedOut, e.Err)
}

func (e *PartialError) Unwrap() error { return e.Err }

// HeaderBackends is the response header in which the find handler says how
// many backends answered, as "answered/total", whenever a fan-out is behind
// it. A response with fewer answered than total is marked not cacheable.
const HeaderBackends = "X-IPNI-Backends"

// StatusError is the error of a [Client] request answered with a status
// other than 200 and 404: the one status error type of every indexkit HTTP
// client (admin.StatusError, handoff.StatusError and ipnisync.StatusError
// are the same type). Its Client is "find", Body the start of the answer's
// body; it wraps no sentinel.
type StatusError = httperr.StatusError

// IncompleteError is the error of a [Client] batch lookup whose 200 answer
// the remote marked incomplete (see [Client.FindBatch]): the results that
// came with it are real, but may not be all there is.
type IncompleteError struct {
	// Why quotes the header that marked the answer.
	Why string
}

func (e *IncompleteError) Error() string { return "answer marked incomplete (" + e.Why + ")" }
