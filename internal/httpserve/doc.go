// Package httpserve runs the HTTP servers of a role (an indexer node, a
// front end) so that no client can hold them: [NewServer] gives a server
// read, write and idle deadlines, [Serve] runs it under an errgroup and
// shuts it down within a bound whatever the clients do, and [WaitStopped]
// is the end of a role's Run, logging the shutdown and its cause.
//
// Its listeners come from the caller: wrap them with internal/netlimit to
// cap their connections. It starts nothing but what [Serve] is given, and
// registers nothing globally. It imports the standard library and
// golang.org/x/sync/errgroup only.
package httpserve
