package freeze

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrDisabled is returned by [Freezer.Freeze] when freezing is
	// disabled (a negative freeze-at percent). The admin API answers it
	// with 400 "freezing disabled", as the reference does.
	ErrDisabled = errors.New("freeze: freezing disabled")

	// ErrDiskUsage is wrapped when the disk usage of a monitored directory
	// cannot be read (the directory is missing, statfs fails, or the
	// reader reports a total of zero).
	ErrDiskUsage = errors.New("freeze: disk usage unavailable")

	// ErrInvalidState is wrapped by [Open] when the persisted state does
	// not decode.
	ErrInvalidState = errors.New("freeze: invalid persisted state")

	// ErrRunTwice is returned by Run when the same [Monitor] (directly or
	// through its [Freezer]) is already running.
	ErrRunTwice = errkind.New(errkind.RunTwice, "freeze: already running")

	// ErrInvalidOption is wrapped by constructors given an argument or an
	// option they cannot honour; the message names it.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "freeze: invalid option")
)
