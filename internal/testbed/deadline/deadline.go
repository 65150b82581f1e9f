package deadline

import (
	"context"
	"testing"
	"time"
)

// margin is how long before the test binary's deadline (go test -timeout)
// a [Context] ends, so that the test can still fail with its own message.
const margin = 5 * time.Second

// Context returns a context derived from tb.Context that is done after d,
// or margin before the test binary's deadline if that comes first. It is
// cancelled when the test ends.
func Context(tb testing.TB, d time.Duration) context.Context {
	tb.Helper()
	end := time.Now().Add(d)
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := t.Deadline(); ok && dl.Add(-margin).Before(end) {
			end = dl.Add(-margin)
		}
	}
	ctx, cancel := context.WithDeadline(tb.Context(), end)
	tb.Cleanup(cancel)
	return ctx
}
