package assignernode

import "errors"

// ErrRunTwice is returned by [Assigner.Run] when it was called before, or
// after [Assigner.Close].
var ErrRunTwice = errors.New("assignernode: Run called twice or after Close")
