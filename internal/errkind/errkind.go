package errkind

import (
	"errors"
	"fmt"
)

// A Kind is a failure that several packages report, each through a
// sentinel of its own made by [New].
type Kind uint8

// The kinds.
const (
	// InvalidOption: a constructor refused an option, an argument or a
	// Config field (ErrInvalidOption, ErrInvalidConfig).
	InvalidOption Kind = iota + 1
	// Closed: a method was called after Close (ErrClosed).
	Closed
	// RunTwice: Run was called while it runs, or again after it returned
	// where a value runs once (ErrRunTwice).
	RunTwice
)

// String returns the kind's name as the sentinels' messages spell it.
func (k Kind) String() string {
	switch k {
	case InvalidOption:
		return "invalid option"
	case Closed:
		return "closed"
	case RunTwice:
		return "run twice"
	}
	return fmt.Sprintf("errkind.Kind(%d)", uint8(k))
}

// New returns a sentinel of kind k whose message is msg. Under errors.Is
// it matches every sentinel of kind k that New returned, and each of also.
func New(k Kind, msg string, also ...error) error {
	return &sentinel{kind: k, msg: msg, also: also}
}

// Of returns the kind of the first sentinel made by [New] in err's tree,
// and false if there is none.
func Of(err error) (Kind, bool) {
	var s *sentinel
	if errors.As(err, &s) {
		return s.kind, true
	}
	return 0, false
}

// sentinel is a package's sentinel of a kind.
type sentinel struct {
	kind Kind
	msg  string
	also []error
}

func (s *sentinel) Error() string { return s.msg }

// Is reports whether target is a sentinel of the same kind.
func (s *sentinel) Is(target error) bool {
	t, ok := target.(*sentinel)
	return ok && t.kind == s.kind
}

// Unwrap returns the wider errors the sentinel also matches.
func (s *sentinel) Unwrap() []error { return s.also }
