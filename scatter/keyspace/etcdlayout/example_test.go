package etcdlayout_test

import (
	"fmt"

	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// A program that takes -layout tells a file from an etcd layout and finds
// the cluster and the layer's prefix in the URL.
func ExampleParseURL() {
	for _, spec := range []string{"layout.json", "etcd://127.0.0.1:2379,127.0.0.1:22379/pool-a"} {
		if !etcdlayout.IsURL(spec) {
			fmt.Println(spec, "is a layout file")
			continue
		}
		eps, prefix, err := etcdlayout.ParseURL(spec)
		fmt.Println(eps, prefix, err)
	}
	// Output:
	// layout.json is a layout file
	// [http://127.0.0.1:2379 http://127.0.0.1:22379] pool-a/ <nil>
}
