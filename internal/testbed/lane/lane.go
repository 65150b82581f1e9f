package lane

import "testing"

// Marker begins every message the lane helpers write under -short, so that
// a reader of `go test -short -json` (the lanes command) can tell which
// packages hold tests of the integration lane.
const Marker = "integration lane (make test)"

// Integration skips tb under -short, the unit lane, with a message that
// names what keeps it out of the lane (what, such as "starts etcd") and
// the lane that runs it. It returns when the test runs in full. Like
// [testing.TB.Skip] it must be called from the goroutine running the test.
func Integration(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s: %s; -short (make check) skips it", Marker, what)
	}
}

// Full reports whether tb runs in full: false under -short, where the
// test runs a smaller form of itself (fewer steps, a smaller input) and
// Full logs that the integration lane runs the whole of it (what names
// what is cut, such as "10,000 merges, 1,000 under -short").
func Full(tb testing.TB, what string) bool {
	tb.Helper()
	if testing.Short() {
		tb.Logf("%s runs this in full: %s; -short (make check) runs a smaller form", Marker, what)
		return false
	}
	return true
}
