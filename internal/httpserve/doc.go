// Package httpserve runs the HTTP servers of indexkit's nodes so that no
// client can hold them: [NewServer] gives a server read and write
// deadlines, [Serve] runs it on a listener under an errgroup and shuts it
// down within a bound whatever the clients do, and [WaitStopped] is the end
// of a node's Run that logs the shutdown.
//
// The role packages under examples/ (the front end, the query node) build
// on it, and so do the programs' own listeners (metrics) through the
// mains' CLI kit, so that a node embedded in another program serves
// exactly as the binary does. The listener caps (connections in total and
// per source) are internal/netlimit's; the caller binds the listener.
//
// It registers nothing globally and imports the standard library and
// golang.org/x/sync/errgroup only.
package httpserve
