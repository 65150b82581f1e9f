package routing

import "errors"

// ErrInvalidOption is wrapped by the errors of [New] for a nil backend or
// an option given a value it cannot honour.
var ErrInvalidOption = errors.New("routing: invalid option")
