package scatter

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrInvalidOption is wrapped by constructor errors for an invalid
	// argument or option.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "scatter: invalid option")

	// ErrBreakerOpen is wrapped by the error of a backend that a Gather
	// skipped because its circuit breaker was open (or half-open with every
	// probe slot taken).
	ErrBreakerOpen = errors.New("scatter: circuit breaker open")
)
