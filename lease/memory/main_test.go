package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// A store starts no goroutines; a Lease's timers must be gone once it is
// lost or released.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
