package scatternode

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

// ErrRunTwice is returned by [Scatter.Run] when it was called before, or
// after [Scatter.Close].
var ErrRunTwice = errkind.New(errkind.RunTwice, "scatternode: Run called twice or after Close")

// ErrFenced is wrapped by the *find.PartialError a lookup ends with while
// [Config].Fenced reports true: the layout the front end reads by may be
// more than one epoch old, so no answer of it is complete.
var ErrFenced = errors.New("scatternode: fenced: cut off from the layout store; the layout in force may be newer than the one read by")
