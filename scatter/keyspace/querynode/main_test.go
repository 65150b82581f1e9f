package querynode_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The node's tasks, HTTP handlers and export streams must all end with
// Run, Close and the test servers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
