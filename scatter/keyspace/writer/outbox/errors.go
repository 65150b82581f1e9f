package outbox

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrClosed is returned by every method of an [Outbox] after Close
	// (and by a [Outbox.Wait] that Close ends).
	ErrClosed = errkind.New(errkind.Closed, "outbox: closed")
	// ErrCorrupt is wrapped by errors about files that do not decode:
	// a record or segment header whose CRC fails, a seq out of order, a
	// segment missing between others. The message names the file and
	// the offset.
	ErrCorrupt = errors.New("outbox: corrupt")
	// ErrInvalidDest is wrapped by errors about a destination name that
	// is empty or longer than [MaxDestLen] bytes.
	ErrInvalidDest = errors.New("outbox: invalid destination")
	// ErrTooLarge is wrapped by the error of an Append whose payload is
	// longer than [MaxPayload].
	ErrTooLarge = errors.New("outbox: payload too large")
	// ErrAckAhead is wrapped by the error of an Ack past the last
	// appended Seq.
	ErrAckAhead = errors.New("outbox: ack past the head")
	// ErrInvalidOption is wrapped by the error of an [Open] given an
	// invalid [Option].
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "outbox: invalid option")
	// ErrLocked is wrapped by the error of an Open of a directory that
	// another open Outbox (in this process or another) holds.
	ErrLocked = errors.New("outbox: directory in use")
	// errGone is returned by a removed queue's append: the Outbox tries
	// again with dest's next queue.
	errGone = errors.New("outbox: queue removed")
)
