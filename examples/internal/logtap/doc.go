// Package logtap learns, in process, what a role of the pool logs: it is
// the writer an in-process pool passes as a role's stderr, where a
// process pool would read the process's standard error.
//
// Every role (examples/indexernode, assignernode, scatternode,
// publishernode) logs slog text lines, and one line
// msg=listening name=<x> addr=<host:port> per listener it has bound,
// before msg=starting. A [Tap] passes every byte on to the next writer
// (os.Stderr, a file, or [io.Discard]), splits lines, and lets a caller wait
// for a line: [Tap.Addr] returns the address of a named listener,
// [Tap.WaitMsg] the fields of the first line with a given msg. So a pool
// that starts a role on 127.0.0.1:0 learns its ports without parsing its
// own copy of the logs, in the same way internal/testbed/proctest does for
// processes.
//
// # Lifecycle and concurrency
//
// [New] starts nothing. A Tap is safe for concurrent use: the role writes
// from its goroutines while others wait. Waits end when the line comes,
// when their context is done, or when [Tap.Close] says the role has
// returned (no line will come): then they fail with [ErrClosed].
//
// # Errors
//
// [Tap.Addr] and [Tap.WaitMsg] return [ErrClosed] (wrapped, naming what
// was awaited) or the context's error.
package logtap
