package netpolicy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start HTTP servers and transports: every goroutine they start
// must be gone when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
