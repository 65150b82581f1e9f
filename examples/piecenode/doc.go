// Package piecenode is the program of the piece sampler role of an indexkit
// pool, as a package: [Run] takes the command-line arguments of
// examples/piece (whose documentation is the manual of every flag, the
// state it keeps and the logs) and runs the role until its context is
// done.
//
// examples/piece is a thin main around [Run]; examples/pool calls [Run] in
// a goroutine to run a whole pool in one process, or runs the role as its
// own process with --processes. Either way the role is the same code with
// the same flags.
//
// # Lifecycle
//
// [Run] starts nothing before it has validated its flags, and returns only
// after every goroutine and listener it started has stopped. It writes its
// log (slog text lines) to the stderr writer it is given; its listener is
// logged as msg=listening name=api addr=<host:port> before the walks
// start, so a caller that passes 127.0.0.1:0 learns the port from that
// line (examples/internal/logtap does that in process). Several [Run]
// calls may run at once in one process, each with its own flags (and its
// own -dir).
package piecenode
