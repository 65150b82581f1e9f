package scatternode

import "github.com/indexkit/indexkit/internal/errkind"

// ErrRunTwice is returned by [Scatter.Run] when it was called before, or
// after [Scatter.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "scatternode: Run called twice or after Close")
