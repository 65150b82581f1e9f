package querynode

import "errors"

var (
	// ErrInvalidConfig is wrapped by [New]'s errors about a [Config] field
	// or an initial layout it cannot use.
	ErrInvalidConfig = errors.New("querynode: invalid config")
	// ErrClosed is returned by methods of a [Node] after [Node.Close].
	ErrClosed = errors.New("querynode: closed")
	// ErrState is wrapped by errors reading or writing the node's durable
	// state in [Config].Dir.
	ErrState = errors.New("querynode: durable state")
	// ErrCopy is wrapped by the errors of a copy task (in [Node.Status]).
	ErrCopy = errors.New("querynode: copy")
)
