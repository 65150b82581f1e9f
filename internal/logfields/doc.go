// Package logfields reads the key=value pairs of a log/slog text line, as
// the module's binaries write them on standard error. Tests that run the
// binaries as processes (internal/testbed/proctest), the in-process pool's log tap
// (examples/internal/logtap) and the fleet demo read their roles' progress
// and listening addresses this way.
//
// It imports the standard library only.
package logfields
