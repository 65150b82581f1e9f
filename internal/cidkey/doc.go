// Package cidkey decodes the CID of a lookup, GET /cid/{cid} of the find
// API (scatter/find) and GET /routing/v1/providers/{cid} of Delegated
// Routing V1 (scatter/routing), into the multihash the index is keyed by,
// so that both word a bad CID the same way.
//
// [Parse] is a pure function, safe for concurrent use. Its errors name
// the problem for the client ("empty CID", "unsupported multibase prefix
// \"n\"", "not a valid CID: cid too short"); the caller adds which
// request and which string, and its own bound on the length.
package cidkey
