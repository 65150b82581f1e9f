package web

import "errors"

// ErrInvalidOption is wrapped by [NewStatus] errors for a nil argument or
// an option given a value it cannot honour.
var ErrInvalidOption = errors.New("web: invalid option")
