package indexernode

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/indexkit/indexkit/store/pebble"
	"github.com/ipfs/go-datastore"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
)

// The move of the state from leveldb to Pebble survives a kill at any
// point: a copy left half done (state.migrating/) is made again from the
// start, and an old directory left after a finished move (state/ and
// datastore/ both there) is removed without touching state/.
func TestMigrateStateResumes(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	legacy := func(dir string, kv map[string]string) {
		t.Helper()
		ds, err := dsleveldb.NewDatastore(filepath.Join(dir, legacyStateDir), nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range kv {
			if err := ds.Put(ctx, datastore.NewKey(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(dir string, kv map[string]string) {
		t.Helper()
		ds, err := openState(ctx, dir, 1<<20, log)
		if err != nil {
			t.Fatal(err)
		}
		defer ds.Close()
		for k, v := range kv {
			got, err := ds.Get(ctx, datastore.NewKey(k))
			if err != nil || string(got) != v {
				t.Errorf("%s = %q, %v; want %q", k, got, err, v)
			}
		}
		for _, gone := range []string{legacyStateDir, stateMigrateDir} {
			if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s/ left: %v", gone, err)
			}
		}
	}
	kv := map[string]string{"/walk/p/lastHead": "h", "/handoff/assigned/p": "x"}

	t.Run("half copied", func(t *testing.T) {
		dir := t.TempDir()
		legacy(dir, kv)
		// A kill during the copy leaves part of it, and nothing under state/.
		ds, err := pebble.OpenDatastore(filepath.Join(dir, stateMigrateDir), 0, log)
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(ds.Put(ctx, datastore.NewKey("/stale"), []byte("s")), ds.Close()); err != nil {
			t.Fatal(err)
		}
		check(dir, kv)
		ds, err = openState(ctx, dir, 0, log)
		if err != nil {
			t.Fatal(err)
		}
		defer ds.Close()
		if ok, err := ds.Has(ctx, datastore.NewKey("/stale")); ok || err != nil {
			t.Errorf("a key of the half-done copy survived: %v, %v", ok, err)
		}
	})
	t.Run("old left", func(t *testing.T) {
		dir := t.TempDir()
		legacy(dir, kv)
		check(dir, kv) // moved
		// A kill after the rename, before the removal: the old directory
		// is back, with values the move already copied and then changed.
		legacy(dir, map[string]string{"/walk/p/lastHead": "older"})
		check(dir, kv)
	})
}
