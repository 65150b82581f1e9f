package assigner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
)

// TestOutcomeOf maps the admin API's answers to the state's outcomes.
func TestOutcomeOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("admin: POST http://127.0.0.1:1/x: %w", err) }
	for _, c := range []struct {
		err     error
		handoff bool
		want    Outcome
	}{
		{nil, false, Done},
		{wrap(admin.ErrAlreadyAssigned), false, AlreadyHeld},
		{wrap(admin.ErrFrozen), false, Refused},
		{wrap(admin.ErrNotAllowed), true, Refused},
		{wrap(admin.ErrNoAssigner), false, Refused},
		// The receiver does not take handoffs from that frozen indexer:
		// asking it again changes nothing until its configuration does.
		{wrap(admin.ErrUnknownIndexer), true, Refused},
		{wrap(admin.ErrUnknownPublisher), true, NoSource},
		{wrap(admin.ErrUnknownPublisher), false, Failed},
		// A FrozenAt that does not check out, a publisher down: retried.
		{wrap(admin.ErrBadFrozenAt), true, Failed},
		{wrap(admin.ErrUnavailable), true, Failed},
		{errors.New("connection refused"), true, Failed},
	} {
		if got := outcomeOf(c.err, c.handoff); got != c.want {
			t.Errorf("outcomeOf(%v, handoff %v) = %v, want %v", c.err, c.handoff, got, c.want)
		}
	}
}
