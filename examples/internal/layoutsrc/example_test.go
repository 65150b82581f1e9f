package layoutsrc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/scatter/keyspace/layouttest"
)

// A layout file as a source: Load reads it, and it keeps no presence
// (with etcd://HOST:PORT/PREFIX the same calls read the etcd store and
// keep the process's status under a lease).
func Example() {
	dir, _ := os.MkdirTemp("", "layoutsrc")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "layout.json")
	if err := keyspace.Save(path, layouttest.Layout(3)); err != nil {
		fmt.Println(err)
		return
	}
	src, err := layoutsrc.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	ctx := context.Background()
	l, err := src.Load(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleQuery, Name: "q1",
		Status: func() keyspace.Status { return keyspace.Status{Epoch: l.Epoch} }})
	fmt.Println("etcd:", src.Etcd(), "epoch:", l.Epoch, "presence:", p != nil, err)
	// Output:
	// etcd: false epoch: 1 presence: false <nil>
}
