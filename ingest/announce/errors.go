package announce

import (
	"errors"
	"fmt"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrMalformed is wrapped by every [DecodeCBOR] and [DecodeJSON] error
	// about bytes that are not an announce message. The message names the
	// field and the problem.
	ErrMalformed = errors.New("announce: malformed message")

	// ErrInvalidMessage is wrapped by the errors of the encoders and senders
	// for a [Message] that cannot be sent: an undefined CID, an empty
	// address, a field over its limit.
	ErrInvalidMessage = errors.New("announce: invalid message")

	// ErrNoPublisher is wrapped by [Message.PublisherAddrInfo] when the
	// message has no addresses or an address without a /p2p/ part.
	ErrNoPublisher = errors.New("announce: no publisher peer ID")

	// ErrManyPublishers is wrapped by [Message.PublisherAddrInfo] when the
	// addresses name more than one peer ID.
	ErrManyPublishers = errors.New("announce: several publisher peer IDs")

	// ErrDenied is returned for an announce whose publisher the policy given
	// with [WithAllow] rejects.
	ErrDenied = errors.New("announce: publisher not allowed")

	// ErrQueueFull is returned for an announce that was accepted but dropped
	// because the consumer is not keeping up (see [Receiver.Next]).
	ErrQueueFull = errors.New("announce: queue full")

	// ErrClosed is returned by the methods of a closed [Receiver] or
	// [HTTPSender].
	ErrClosed = errkind.New(errkind.Closed, "announce: closed")

	// ErrNotRunning is returned by [Gossip.Send] when Run has not joined the
	// topic yet or has returned.
	ErrNotRunning = errors.New("announce: gossip not running")

	// ErrRunTwice is returned by a [Gossip.Run] called while another runs.
	// It also matches ErrNotRunning, which such a Run returned before.
	ErrRunTwice = errkind.New(errkind.RunTwice, "announce: gossip Run called twice", ErrNotRunning)

	// ErrRejected is wrapped by [HTTPSender.Send] errors for a receiver that
	// answered with a status other than 2xx; the message holds the URL and
	// the status, not the receiver's body, which the error could carry into
	// answers served to others.
	ErrRejected = errors.New("announce: rejected by receiver")

	// ErrInvalidOption is wrapped by constructor errors for an option value
	// out of range.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "announce: invalid option")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidMessage}, args...)...)
}
