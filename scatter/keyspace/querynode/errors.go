package querynode

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrInvalidConfig is wrapped by [New]'s errors about a [Config] field
	// or an initial layout it cannot use.
	ErrInvalidConfig = errkind.New(errkind.InvalidOption, "querynode: invalid config")
	// ErrClosed is returned by methods of a [Node] after [Node.Close].
	ErrClosed = errkind.New(errkind.Closed, "querynode: closed")
	// ErrRunTwice is returned by [Node.Run] while another Run of the node
	// runs.
	ErrRunTwice = errkind.New(errkind.RunTwice, "querynode: Run called twice")
	// ErrState is wrapped by errors reading or writing the node's durable
	// state in [Config].Dir.
	ErrState = errors.New("querynode: durable state")
	// ErrCopy is wrapped by the errors of a copy task (in [Node.Status]).
	ErrCopy = errors.New("querynode: copy")
)
