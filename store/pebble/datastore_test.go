package pebble_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/ipfs/go-datastore"

	"github.com/indexkit/indexkit/store/pebble"
)

// A state datastore keeps what was put across a reopen, under a budget
// and without one.
func TestOpenDatastore(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int64{0, 4 << 20} {
		dir := t.TempDir()
		ds, err := pebble.OpenDatastore(dir, budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ds.Put(ctx, datastore.NewKey("/walk/p/lastHead"), []byte("h")); err != nil {
			t.Fatal(err)
		}
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
		ds, err = pebble.OpenDatastore(dir, budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ds.Get(ctx, datastore.NewKey("/walk/p/lastHead"))
		if err != nil || string(v) != "h" {
			t.Errorf("budget %d: after a reopen %q, %v", budget, v, err)
		}
		if _, err := ds.Get(ctx, datastore.NewKey("/absent")); !errors.Is(err, datastore.ErrNotFound) {
			t.Errorf("budget %d: absent key: %v", budget, err)
		}
		ds.Close()
	}
}

// A node keeps its walker positions in a datastore sized to its share of
// the disk budget.
func ExampleOpenDatastore() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "indexkit-state")
	defer os.RemoveAll(dir)
	ds, err := pebble.OpenDatastore(dir, 16<<20, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ds.Close()
	_ = ds.Put(ctx, datastore.NewKey("/walk/publisher/lastHead"), []byte("head"))
	v, err := ds.Get(ctx, datastore.NewKey("/walk/publisher/lastHead"))
	fmt.Println(string(v), err)
	// Output: head <nil>
}
