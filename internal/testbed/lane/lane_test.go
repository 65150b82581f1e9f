package lane_test

import (
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestIntegration runs a marked subtest: under -short (make check) it is
// skipped before its body's next line, otherwise (make test runs the
// package both ways) it runs to its end.
func TestIntegration(t *testing.T) {
	ran := false
	t.Run("marked", func(t *testing.T) {
		lane.Integration(t, "a test of lane")
		ran = true
	})
	if testing.Short() && ran {
		t.Fatal("under -short a marked test ran on")
	}
	if !testing.Short() && !ran {
		t.Fatal("without -short a marked test was skipped")
	}
}
