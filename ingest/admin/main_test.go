package admin_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The handler and the client start no goroutine; the test servers and
// their connections must all be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
