package routing

import "github.com/indexkit/indexkit/internal/errkind"

// ErrInvalidOption is wrapped by the errors of [New] for a nil backend or
// an option given a value it cannot honour.
var ErrInvalidOption = errkind.New(errkind.InvalidOption, "routing: invalid option")
