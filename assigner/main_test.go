package assigner_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The Service starts goroutines (its loop, intake, requests, polls); they
// must all have exited when Run returns, and the test servers with them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
