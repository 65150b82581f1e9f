package assignernode

import "github.com/indexkit/indexkit/internal/errkind"

// ErrRunTwice is returned by [Assigner.Run] when it was called before, or
// after [Assigner.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "assignernode: Run called twice or after Close")
