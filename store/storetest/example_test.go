package storetest_test

import (
	"fmt"

	"github.com/indexkit/indexkit/store/storetest"
)

// The suite's fixtures are deterministic, so a failing run can be replayed.
func ExampleMultihashes() {
	mhs := storetest.Multihashes("seed", 2)
	fmt.Println(mhs[0].B58String())
	fmt.Println(mhs[1].B58String())
	fmt.Println(storetest.PeerID("provider-1") == storetest.PeerID("provider-1"))
	// Output:
	// QmQ6tVXa1H7XW2QmZVDYtWq2XvJzrKUwaLtCJEzfE6VWH2
	// QmW59hCwC8FngQfUuG99cGNCftN9WGhc7WCj9CwSjsBNLZ
	// true
}
