package sample

import (
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/internal/httperr"
)

var (
	// ErrNotFound is wrapped by a [Source]'s error when it holds no such
	// provider and context ID: the spec's 404.
	ErrNotFound = errors.New("sample: no such provider and context ID")

	// ErrNotSampled is wrapped by a [Source]'s error when it holds the
	// context but cannot sample it (the store keeps no populations, or
	// not for this context): 501.
	ErrNotSampled = errors.New("sample: this context cannot be sampled here")

	// ErrInvalidOption is wrapped by constructor errors for an invalid
	// argument or option.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "sample: invalid option")
)

// StatusError is the error of a [Client] request answered with a status
// other than 200; it unwraps to ErrNotFound for 404 and ErrNotSampled for
// 501. It is the same type as the other indexkit clients' StatusError.
type StatusError = httperr.StatusError

// FanoutError is the error of [First] when no source answered a sample
// and not all of them said they hold no such context: a handler answers
// it with 504 when every failure was a timeout, else 502, never with a
// 404 that is not known to be true.
type FanoutError struct {
	// Total is the number of sources asked; Failed how many failed
	// (neither answered nor said ErrNotFound or ErrNotSampled); TimedOut
	// how many of those ran out of time.
	Total, Failed, TimedOut int
	// Err joins the failures' errors.
	Err error
}

func (e *FanoutError) Error() string {
	return fmt.Sprintf("sample: no answer: %d of %d sources failed (%d timed out): %v", e.Failed, e.Total, e.TimedOut, e.Err)
}

func (e *FanoutError) Unwrap() error { return e.Err }
