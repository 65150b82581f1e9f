package agent

import (
	"github.com/indexkit/indexkit/internal/errkind"
	"github.com/indexkit/indexkit/lease"
)

// ErrRunTwice is returned by a second call of [Manager.Run]. It also
// matches lease.ErrInvalid, which a second Run returned before.
var ErrRunTwice = errkind.New(errkind.RunTwice, "agent: Run called twice", lease.ErrInvalid)
