package metadata

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is wrapped by every [Decode] error about bytes that are not
	// valid metadata: a truncated or non-minimal varint, a payload that runs
	// past the end, a graphsync map that is not the expected dag-cbor, a
	// non-zero length for a protocol whose payload is empty. The message names
	// the protocol and the byte offset where the problem starts.
	ErrMalformed = errors.New("metadata: malformed")

	// ErrDuplicate is wrapped by the errors of [Decode] and [New] when a
	// protocol code occurs more than once.
	ErrDuplicate = errors.New("metadata: duplicate protocol")

	// ErrTooLarge is wrapped by the errors of [Decode] for input longer than
	// [MaxSize] bytes, and of [New] for protocols that would encode to more.
	ErrTooLarge = errors.New("metadata: too large")

	// ErrInvalidProtocol is wrapped by the errors of [New] for a protocol
	// value that cannot be encoded: a nil protocol, a graphsync protocol
	// without a PieceCID, an [Unknown] that carries a known code or a code
	// beyond 2^63-1.
	ErrInvalidProtocol = errors.New("metadata: invalid protocol")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}
