package querynode

import "errors"

// ErrRunTwice is returned by [Node.Run] when it was called before, or
// after [Node.Close].
var ErrRunTwice = errors.New("querynode: Run called twice or after Close")
