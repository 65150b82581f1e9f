// Package deadline bounds the calls a test makes that would block forever
// on a bug: an in-process Main that should have refused its flags but runs,
// a wait for a log line that never comes. A test that hangs on a bug is a
// bug of its own: it costs the whole binary's -timeout (minutes) and then
// reports a goroutine dump instead of the call that hung.
//
// [Context] gives such a call a context that ends at the earlier of a
// duration from now and shortly before the test binary's own deadline, so
// that the call returns an error the test can name before `go test` kills
// the binary.
//
// It is test support only and imports no package of the module.
package deadline
