package piecenode

import "github.com/indexkit/indexkit/internal/errkind"

// ErrRunTwice is returned by [Sampler.Run] when it was called before, or
// after [Sampler.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "piecenode: Run called twice or after Close")
