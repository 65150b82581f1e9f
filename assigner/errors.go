package assigner

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrInvalidConfig is wrapped by [NewState] and [State.AddIndexer]
	// when the configuration cannot be honoured; the message names the
	// field.
	ErrInvalidConfig = errkind.New(errkind.InvalidOption, "assigner: invalid config")

	// ErrInvalidOption is wrapped by [NewService] when a [ServiceOption]
	// is given a value out of range; the message names the option.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "assigner: invalid option")

	// ErrInvalidStatus is returned by [State.Polled] for a status without
	// the indexer's peer ID, which handoffs need.
	ErrInvalidStatus = errors.New("assigner: invalid indexer status")

	// ErrUnknownIndexer is returned by the indexer events ([State.Polled],
	// [State.Offline], [State.Online], [State.RemoveIndexer]) for an ID
	// that is not in the pool.
	ErrUnknownIndexer = errors.New("assigner: unknown indexer")
)

var (
	// ErrNotRunning is returned by [Service.Snapshot] (and answered 503 by
	// the state API) while [Service.Run] is not running.
	ErrNotRunning = errors.New("assigner: service not running")

	// ErrRunTwice is returned by a second call of [Service.Run].
	ErrRunTwice = errkind.New(errkind.RunTwice, "assigner: service already run")
)
