package outbox_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Waits and the delivery goroutines of the tests must all end with them;
// the outbox itself starts no goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
