package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a store starts must be gone once it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
