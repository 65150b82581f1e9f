package piecenode

import "errors"

// ErrRunTwice is returned by [Sampler.Run] when it was called before, or
// after [Sampler.Close].
var ErrRunTwice = errors.New("piecenode: Run called twice or after Close")
