package lease_test

import (
	"context"
	"fmt"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/memory"
)

// An item with two copies: the primary slot and one replica, each won by
// its own node. Once the primary's owner is gone, reads go to the replica.
func ExamplePutReplicated() {
	ctx := context.Background()
	s, err := memory.New(lease.WithMaxBids(1))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if err := lease.PutReplicated(ctx, s, lease.Item{ID: "repo-1", Commit: "abc123"}, 2); err != nil {
		panic(err)
	}
	refs := map[string]lease.Ref{}
	for slot, node := range []string{"node-a", "node-b"} {
		id := lease.ReplicaID("repo-1", slot)
		res, err := s.Bid(ctx, id, node, 1<<30)
		if err != nil {
			panic(err)
		}
		ready := true
		if _, err := s.Update(ctx, res.Result.Grant.Ref, lease.Mutation{Ready: &ready}); err != nil {
			panic(err)
		}
		refs[id] = res.Result.Grant.Ref
		item, k := lease.SplitReplicaID(id)
		fmt.Println(id, "is slot", k, "of", item, "held by", node)
	}

	read := func() {
		rows, err := lease.Replicas(ctx, s, "repo-1", 2)
		if err != nil {
			panic(err)
		}
		if r, ok := lease.Serving(rows); ok {
			fmt.Println("read", r.ID, "from", r.Owner)
		}
	}
	read()
	if err := s.Release(ctx, refs["repo-1"]); err != nil { // the primary's owner leaves
		panic(err)
	}
	read()
	// Output:
	// repo-1 is slot 0 of repo-1 held by node-a
	// repo-1#1 is slot 1 of repo-1 held by node-b
	// read repo-1 from node-a
	// read repo-1#1 from node-b
}
