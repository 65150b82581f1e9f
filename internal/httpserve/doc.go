// Package httpserve runs the HTTP servers of a role (a node, a front end,
// an assigner, a sampler, a publisher) so that they cannot be exhausted
// and stop in bounded time: [NewServer] gives a server read and write
// deadlines, [Serve] runs it on a listener under an errgroup and shuts it
// down when the group's context ends, waiting at most a timeout for
// requests in flight, and [WaitStopped] is the end of a role's Run that
// logs the shutdown and waits for everything it started.
//
// # Lifecycle
//
// [Serve] starts two goroutines under the caller's errgroup: one serving,
// one waiting for the context to end and then shutting the server down.
// Both have returned once the errgroup's Wait returns, so a Run built on
// them returns only after its servers have stopped. Past the timeout a
// shutdown closes the connections still open and is not an error.
//
// # Errors
//
// Serve's errors start with "<name> server: ". WaitStopped returns the
// group's error, except context.Canceled, which is how a member reports
// that the context ended.
//
// It imports the standard library and golang.org/x/sync/errgroup only;
// connection caps are internal/netlimit's, applied to the listener.
package httpserve
