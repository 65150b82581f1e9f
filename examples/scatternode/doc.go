// Package scatternode is the program of the scatter role of an indexkit pool,
// as a package: [Run] takes the command-line arguments of examples/scatter
// (whose documentation is the manual of every flag, the config file and
// the logs) and runs the role until its context is done.
//
// examples/scatter is a thin main around [Run]; examples/pool calls [Run] in
// goroutines to run a whole pool in one process, or starts examples/scatter
// as a process with --processes. Either way the role is the same code with
// the same flags.
//
// # Lifecycle
//
// [Run] starts nothing before it has validated its flags, and returns only
// after every goroutine and listener it started has stopped. It writes its
// log (slog text lines) to the stderr writer it is given; each bound
// listener is logged as msg=listening name=<x> addr=<host:port> before
// msg=starting, so a caller that passes 127.0.0.1:0 learns the ports from
// those lines (examples/internal/logtap does that in process).
// Several [Run] calls may run at once in one process, each with its own
// flags.
package scatternode
