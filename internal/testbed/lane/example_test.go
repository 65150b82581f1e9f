package lane_test

import (
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// A test that starts a whole pool marks itself as the integration lane's
// before it starts anything: `go test -short` skips it, `go test` runs it.
func ExampleIntegration() {
	var t *testing.T // the test's own *testing.T
	if t == nil {
		return
	}
	lane.Integration(t, "starts a whole pool")
	// ... start the pool ...
	// Output:
}
