package scatternode

import "errors"

// ErrRunTwice is returned by [Scatter.Run] when it was called before, or
// after [Scatter.Close].
var ErrRunTwice = errors.New("scatternode: Run called twice or after Close")
