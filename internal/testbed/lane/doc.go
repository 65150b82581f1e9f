// Package lane sorts the module's tests into its two lanes. The unit lane
// is `go test -short` (`make check`, for the edit loop): tests that run in
// the test binary's own process, on temporary directories, loopback
// listeners and the machine's shared Redis. The integration lane is
// everything else, which `make test` adds: tests that start processes
// (the module's commands, the test binary re-executed as a child,
// redis-server, etcd, Chromium) or whole pools.
//
// [Integration] marks a test as the integration lane's: under -short it
// skips the test with a message naming the lane. The test beds that start
// processes (internal/testbed/proctest, etcdtest, redistest's servers,
// browsertest) call it, so every test that uses them leaves the unit lane
// without a line of its own; a test that starts a whole pool, or re-executes
// its binary by hand, calls it first.
//
// It is test support only and imports no package of the module.
package lane
