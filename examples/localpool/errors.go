package localpool

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

// Sentinels of the package; errors wrap them with what failed.
var (
	// ErrConfig is wrapped by [Start] for an invalid [Config].
	ErrConfig = errors.New("pool: invalid config")
	// ErrUnknownRole is wrapped by the role methods for a name that is
	// not a role of the pool.
	ErrUnknownRole = errors.New("pool: unknown role")
	// ErrRunning is wrapped by [Pool.Start] for a role that runs.
	ErrRunning = errors.New("pool: role is running")
	// ErrStopped is wrapped by [Pool.Stop] and [Pool.Kill] for a role that
	// does not run.
	ErrStopped = errors.New("pool: role is not running")
	// ErrClosed is wrapped by every method after [Pool.Close].
	ErrClosed = errkind.New(errkind.Closed, "pool: closed")
)
