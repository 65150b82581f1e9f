package netlimit

import "errors"

// ErrInvalidOption is wrapped by constructor errors for an option value out
// of range.
var ErrInvalidOption = errors.New("netlimit: invalid option")
