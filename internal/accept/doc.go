// Package accept picks the answer format of the find listeners' JSON APIs
// (scatter/find's find API, scatter/routing's Delegated Routing V1) from
// a request's Accept header, so that both negotiate the same way: NDJSON
// when the route streams and the client lists it, else JSON when the
// client accepts JSON or anything (a missing Accept header means JSON),
// else 406. An element with q=0 excludes its type.
//
// It imports the standard library only.
package accept
