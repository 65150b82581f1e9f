package querynode

import "github.com/indexkit/indexkit/internal/errkind"

// ErrRunTwice is returned by [Node.Run] when it was called before, or
// after [Node.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "querynode: Run called twice or after Close")
