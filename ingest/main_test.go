package ingest_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine Run and the walks start must be gone when they return.
// goleveldb's memory-pool drainer (the crash test's walker datastore) may
// outlive Close by up to a second, so it is ignored.
// The crash child is killed by its parent, so it skips the check.
func TestMain(m *testing.M) {
	if os.Getenv(benchPubsEnv) != "" {
		if err := benchPublishersChild(); err != nil {
			fmt.Fprintln(os.Stderr, "bench publishers:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(crashEnv) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"))
}
