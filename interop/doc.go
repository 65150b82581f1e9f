// Package interop holds compatibility tests of indexkit against the
// reference IPNI implementation, github.com/ipni/go-libipni: the same
// advertisements and entry chunks encode to the same dag-json bytes and
// CIDs, signatures made by either verify with the other, blocks and
// metadata written by either decode with the other.
//
// It is a separate Go module, nested in the repository, so that
// go-libipni and its large dependency graph (go-libp2p, gossipsub, ...)
// stay out of the root module's go.mod and go.sum: embedders of indexkit
// never download or build the reference library. The root module's
// go test ./... does not descend into it; run it with
//
//	cd interop && go test -race -count=1 ./...
//
// (the root Makefile's test target does). The package has no non-test
// code besides this comment.
package interop
