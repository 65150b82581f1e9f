// Under -race the manager's tests are not built (manager_test.go says
// why). This test stands in for them in a race binary, so that `make
// test`, which runs its unit lane under -race and then, without -race,
// only the packages that hold integration-lane tests, finds this package
// among those (package lane's Marker) and runs the manager's tests there.

//go:build race

package agent_test

import (
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/lane"
)

func TestManagerTestsRunWithoutRace(t *testing.T) {
	lane.Integration(t, "the manager's tests, built without -race (manager_test.go)")
	t.Skip("a race binary does not hold the manager's tests: go test without -race runs them")
}
