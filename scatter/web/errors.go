package web

import "github.com/indexkit/indexkit/internal/errkind"

// ErrInvalidOption is wrapped by [NewStatus] errors for a nil argument or
// an option given a value it cannot honour.
var ErrInvalidOption = errkind.New(errkind.InvalidOption, "web: invalid option")
