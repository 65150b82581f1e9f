package publishernode

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrRunTwice is returned by [Node.Run] when it was called before, or
	// after [Node.Close].
	ErrRunTwice = errkind.New(errkind.RunTwice, "publishernode: Run called twice or after Close")

	// ErrInvalidSpec is wrapped by [NewPublisher] for a [Spec] it cannot
	// honour; the message names the field.
	ErrInvalidSpec = errors.New("publisher: invalid spec")

	// ErrState is wrapped by [New] when the state file in Dir cannot be
	// read or belongs to another configuration (other seed, entries,
	// chunk size, removals, updates or fault): a restart must regenerate
	// the same chains.
	ErrState = errors.New("publisher: state in -dir does not match")

	// ErrUnknownFault is wrapped for a [Fault] name that is not one of the
	// known ones.
	ErrUnknownFault = errors.New("publisher: unknown fault")
)
