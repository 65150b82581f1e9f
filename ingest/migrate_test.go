package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	dsleveldb "github.com/ipfs/go-ds-leveldb"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/store/pebble"
)

func openLevelDB(dir string) (datastore.Datastore, error) { return dsleveldb.NewDatastore(dir, nil) }

func openPebbleDS(dir string) (datastore.Batching, error) { return pebble.OpenDatastore(dir, 0, nil) }

// writeDS puts kv into a leveldb datastore at dir.
func writeDS(t testing.TB, dir string, kv map[string]string) {
	t.Helper()
	ds, err := dsleveldb.NewDatastore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range kv {
		if err := ds.Put(context.Background(), datastore.NewKey(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
}

// readDS returns every key of the Pebble datastore at dir.
func readDS(t testing.TB, dir string) map[string]string {
	t.Helper()
	ds, err := pebble.OpenDatastore(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	got := make(map[string]string)
	res, err := ds.Query(context.Background(), query.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range res.Next() {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		got[r.Key] = string(r.Value)
	}
	return got
}

func gone(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left: %v", path, err)
	}
}

// MigrateDatastore copies every key (more than a batch), removes the old
// datastore, and leaves nothing half-done; killed during the copy it
// copies again from the start, killed after the rename it only removes
// the old one.
func TestMigrateDatastore(t *testing.T) {
	ctx := context.Background()
	kv := make(map[string]string)
	for i := range 2500 {
		kv[fmt.Sprintf("/walk/p%d/lastHead", i)] = fmt.Sprint("h", i)
	}
	dir := t.TempDir()
	from, to := filepath.Join(dir, "datastore"), filepath.Join(dir, "state")

	// Nothing to move: nothing is created.
	if n, err := ingest.MigrateDatastore(ctx, from, to, openLevelDB, openPebbleDS, nil); n != 0 || err != nil {
		t.Fatalf("no old datastore: %d, %v", n, err)
	}
	gone(t, to)

	// A kill during an earlier copy left part of one.
	writeDS(t, from, kv)
	half, err := pebble.OpenDatastore(to+".migrating", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(half.Put(ctx, datastore.NewKey("/stale"), []byte("s")), half.Close()); err != nil {
		t.Fatal(err)
	}
	n, err := ingest.MigrateDatastore(ctx, from, to, openLevelDB, openPebbleDS, nil)
	if err != nil || n != len(kv) {
		t.Fatalf("migrate: %d keys, %v; want %d", n, err, len(kv))
	}
	gone(t, from)
	gone(t, to+".migrating")
	got := readDS(t, to)
	if len(got) != len(kv) || got["/stale"] != "" || got["/walk/p7/lastHead"] != "h7" {
		t.Fatalf("moved %d keys (stale %q), want %d", len(got), got["/stale"], len(kv))
	}

	// A kill after the rename, before the removal: the old datastore is
	// back, with a value the move copied and then changed. It is removed,
	// not copied over the new one.
	writeDS(t, from, map[string]string{"/walk/p7/lastHead": "older"})
	if n, err := ingest.MigrateDatastore(ctx, from, to, openLevelDB, openPebbleDS, nil); n != 0 || err != nil {
		t.Fatalf("old left: %d, %v", n, err)
	}
	gone(t, from)
	if got := readDS(t, to); got["/walk/p7/lastHead"] != "h7" {
		t.Fatalf("the old datastore was copied over the new one: %q", got["/walk/p7/lastHead"])
	}

	// An old datastore that does not open fails the move and creates
	// nothing.
	dir = t.TempDir()
	from, to = filepath.Join(dir, "datastore"), filepath.Join(dir, "state")
	writeDS(t, from, kv)
	boom := errors.New("locked")
	if _, err := ingest.MigrateDatastore(ctx, from, to, func(string) (datastore.Datastore, error) { return nil, boom }, openPebbleDS, nil); !errors.Is(err, boom) {
		t.Fatalf("old does not open: %v", err)
	}
	gone(t, to)
}

// A node that kept its state in go-ds-leveldb moves it to Pebble at
// start, once, then opens the new one.
func ExampleMigrateDatastore() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "indexkit-migrate")
	defer os.RemoveAll(dir)
	from, to := filepath.Join(dir, "datastore"), filepath.Join(dir, "state")
	old, _ := dsleveldb.NewDatastore(from, nil)
	_ = old.Put(ctx, datastore.NewKey("/walk/publisher/lastHead"), []byte("head"))
	_ = old.Close()

	n, err := ingest.MigrateDatastore(ctx, from, to, openLevelDB, openPebbleDS, nil)
	fmt.Println(n, err)
	ds, _ := pebble.OpenDatastore(to, 0, nil)
	defer ds.Close()
	v, err := ds.Get(ctx, datastore.NewKey("/walk/publisher/lastHead"))
	fmt.Println(string(v), err)
	// Output:
	// 1 <nil>
	// head <nil>
}
