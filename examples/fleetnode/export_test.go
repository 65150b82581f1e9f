package fleetnode

import (
	"context"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
)

// What the external tests (package fleetnode_test, which run nodes on
// the real backends of fleetnode/redis and fleetnode/etcd) reach inside.

// FetchHandoff is the node's fetch of an offered index.
func FetchHandoff(n *Node, ctx context.Context, item, commit string) (*codeindex.Index, error) {
	return n.fetchHandoff(ctx, item, commit)
}

// HandoffValue is a handoffs entry.
func HandoffValue(commit, node string) string { return handoffValue(commit, node) }

// IndexOf is the index the node serves for item, or nil.
func IndexOf(n *Node, item string) *codeindex.Index {
	if ri := n.idx.get(item); ri != nil {
		return ri.Index
	}
	return nil
}

// Corruptible swaps item's index on n for one whose bytes the test holds
// (see corruptible) and returns the function that flips one.
func Corruptible(t *testing.T, n *Node, item string, files []repogen.File) func() {
	return corruptible(t, n.idx, item, files)
}

// HoldClones makes every clone URL lookup of n wait for gate first.
func HoldClones(n *Node, gate <-chan struct{}) {
	url := n.idx.url
	n.idx.url = func(ctx context.Context, item string) (string, error) {
		<-gate
		return url(ctx, item)
	}
}
