package scatter

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// handler's batch workers, HTTP backends' streams and Gather fan-outs must
// all end with their requests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
