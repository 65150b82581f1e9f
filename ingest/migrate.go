package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
)

// MigrateDatastore moves a node's persisted state (walker positions,
// assignments) from the datastore in directory from, kept by an earlier
// version, to a new datastore in directory to, once. openOld opens the
// old one; openNew opens (creating) a new one in the directory it is
// given. It copies every key into to+".migrating", syncs and closes it,
// renames it to to, syncs the parent directory, then removes from: a
// process killed at any point finds either no to (and copies again from
// the start, over what a half-done copy left) or a complete one (and only
// removes what is left of from, whatever it holds). It returns the keys
// copied; 0 and nil when from does not exist. The caller opens to
// afterwards.
func MigrateDatastore(ctx context.Context, from, to string,
	openOld func(dir string) (datastore.Datastore, error),
	openNew func(dir string) (datastore.Batching, error),
	log *slog.Logger,
) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("migrate state: %w", err)
	}
	if _, err := os.Stat(to); err == nil {
		log.Info("state: removing the old state left by a finished migration", "dir", from)
		return 0, removeDir(from)
	}
	tmp := to + ".migrating"
	if err := os.RemoveAll(tmp); err != nil {
		return 0, fmt.Errorf("migrate state: %w", err)
	}
	old, err := openOld(from)
	if err != nil {
		return 0, fmt.Errorf("migrate state: open %s: %w", from, err)
	}
	n, err := copyInto(ctx, old, tmp, openNew)
	if cerr := old.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("migrate state from %s: %w", from, err)
	}
	if err := os.Rename(tmp, to); err != nil {
		return n, fmt.Errorf("migrate state: %w", err)
	}
	if err := syncDir(filepath.Dir(to)); err != nil {
		return n, fmt.Errorf("migrate state: %w", err)
	}
	log.Info("state: moved to a new datastore", "keys", n, "from", from, "to", to)
	return n, removeDir(from)
}

// copyInto copies every key of old into a new datastore at path, syncs
// and closes it.
func copyInto(ctx context.Context, old datastore.Datastore, path string, openNew func(string) (datastore.Batching, error)) (int, error) {
	nds, err := openNew(path)
	if err != nil {
		return 0, err
	}
	n, err := copyKeys(ctx, old, nds)
	if err == nil {
		err = nds.Sync(ctx, datastore.NewKey("/"))
	}
	if cerr := nds.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return n, err
}

// copyKeys copies every key of from into to, in batches.
func copyKeys(ctx context.Context, from datastore.Datastore, to datastore.Batching) (int, error) {
	res, err := from.Query(ctx, query.Query{})
	if err != nil {
		return 0, err
	}
	defer res.Close()
	n := 0
	b, err := to.Batch(ctx)
	if err != nil {
		return 0, err
	}
	for r := range res.Next() {
		if r.Error != nil {
			return n, r.Error
		}
		if err := b.Put(ctx, datastore.RawKey(r.Key), r.Value); err != nil {
			return n, err
		}
		if n++; n%1024 == 0 {
			if err := b.Commit(ctx); err != nil {
				return n, err
			}
			if b, err = to.Batch(ctx); err != nil {
				return n, err
			}
		}
	}
	return n, b.Commit(ctx)
}

func removeDir(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("migrate state: remove %s: %w", path, err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
