// Package poll waits in tests for a condition that another goroutine or
// process brings about, bounded in time.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 50 * time.Millisecond

// Until checks cond every Interval until it holds, and fails the test
// (t.Fatalf, naming what and the last state cond reported) once d has
// passed without it.
func Until(t testing.TB, d time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, state)
			return
		}
		time.Sleep(Interval)
	}
}
