package netlimit

import "github.com/indexkit/indexkit/internal/errkind"

// ErrInvalidOption is wrapped by constructor errors for an option value out
// of range.
var ErrInvalidOption = errkind.New(errkind.InvalidOption, "netlimit: invalid option")
