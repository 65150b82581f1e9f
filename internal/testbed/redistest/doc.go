// Package redistest is the test support every Redis-backed package of
// indexkit shares: where the test Redis is, what a test does when it is
// missing, a client, a key prefix of the test's own that is deleted at the
// end, and a redis-server of the test's own that can be killed and started
// again.
//
// # The shared server
//
// Tests use the Redis at [Addr]: REDIS_ADDR, else the machine's
// 127.0.0.1:6379. The server is shared (by the packages tested in parallel,
// and by anything else on the machine), so a test keeps to keys under a
// [Prefix] of its own and never runs KEYS, FLUSHDB or FLUSHALL: the prefix's
// keys are found with SCAN and removed with UNLINK ([Unlink]).
//
//	c := redistest.Client(t, redistest.Addr()) // fails or skips without Redis
//	s, err := leaseredis.New(c, redistest.Prefix(t, c, "lease"))
//
// [Client] and [Prefix] register their cleanups with the test, in the
// order that makes them safe: call Prefix after Client, so that the keys
// are deleted before the client is closed.
//
// # A server of the test's own
//
// [StartServer] runs redis-server on a free 127.0.0.1 port, in a temporary
// directory, for tests that must kill it, restart it or lose its data.
// Under -short it skips the test: a server of its own is the integration
// lane's (internal/testbed/lane); the shared server of [Addr] is not.
// Without options it keeps nothing on disk ([Server.Kill] then [Server.Start]
// gives an empty server on the same port); with [WithAOF] it writes an
// append-only file fsynced at every write, so a killed server comes back
// with every acknowledged write. [Server.Restart] stops it (SIGKILL, or
// SIGTERM for a graceful shutdown) and starts it again in one step that
// returns its failure, so that it can run on a goroutine of its own while
// the test's clients keep calling. The process is signalled by its PID only,
// reaped, and killed at the end of the test.
//
// # Missing components
//
// A test that cannot reach Redis, or cannot find the redis-server binary,
// calls [Unavailable]: it fails when the environment variable CI is set
// (the CI machine must have Redis) and is skipped otherwise.
//
// # Concurrency and errors
//
// Every function that takes a testing.TB must be called from the test's
// goroutine (it may call FailNow or SkipNow). [Addr], [NewPrefix], [Match],
// [Keys] and [Unlink] take no test and may be called from any goroutine,
// for example in a benchmark's own cleanup; [Keys] and [Unlink] return
// errors that name the command that failed, the others report through the
// test.
//
// Its one runnable Example is [Match]'s: everything else needs a Redis
// server or the redis-server binary, and house style allows an Example only
// with an // Output comment that runs without one.
//
// The package imports only the standard library, testing and go-redis, so
// that any test of the module may import it. It imports testing, so non-test
// code (such as a binary's own redis-server) must not.
package redistest
