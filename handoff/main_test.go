package handoff_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Handoffs and the ingester runs of the end-to-end test must leave no
// goroutine behind. goleveldb's memory-pool drainer may outlive Close by up
// to a second, so it is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"))
}
