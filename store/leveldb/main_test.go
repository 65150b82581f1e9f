package leveldb_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a store starts must be gone once it is closed. goleveldb's
// memory-pool drainer is the exception: after Close it waits up to a second
// for the pool to empty before it exits, so it may still be seen here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"))
}
