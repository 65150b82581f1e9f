// Package proctest runs the module's commands as real processes in tests:
// it builds a command with the go tool, starts it, reads its output (the
// slog text lines the examples write on standard error), waits for lines
// with bounded waits, and stops it by PID.
//
// [Build] builds a package of the root module (github.com/indexkit/indexkit,
// from its own directory, so that nested modules such as interop can use
// it too) into a temporary directory of the test, with -race when the test
// binary itself runs with the race detector.
//
// Under -short, [Build] and [Start] skip the test: processes are the
// integration lane's (internal/testbed/lane), which `make test` runs and
// `make check` does not.
//
// [Start] runs a binary and registers a cleanup that stops it if the test
// has not: SIGTERM, then SIGKILL if it has not exited within
// [DefaultTimeout]; when the test failed, the cleanup logs the process's
// output. [Proc.WaitMsg] waits for a line with a given msg= (a ready line
// such as msg=starting), [Proc.Addr] for a msg=listening name=<x>
// addr=<host:port> line, [Proc.WaitLine] for a line matching a regular
// expression; each fails the test at once if the process exits first.
// [Proc.Stop] sends SIGTERM and returns the exit code, [Proc.Wait] waits
// for an exit the process makes on its own, and [Proc.Output] is
// everything the process wrote, for failure messages.
//
// It is test support only, imports no package of the module, and is
// internal: only the module and the modules nested in its directory (by
// import path) can import it.
package proctest
