package lane

import "testing"

// Integration skips tb under -short, the unit lane, with a message that
// names what keeps it out of the lane (what, such as "starts etcd") and
// the lane that runs it. It returns when the test runs in full. Like
// [testing.TB.Skip] it must be called from the goroutine running the test.
func Integration(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("integration lane (make test): %s; -short (make check) skips it", what)
	}
}
