package ipnisync_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (servers, libp2p hosts, connections) must
// be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
