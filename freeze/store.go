package freeze

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Store persists the frozen state: a few hundred bytes the [Freezer] writes
// whole at each transition. Load returns what the last successful Save
// wrote, or nil and no error when nothing was saved. Save must be atomic:
// after a crash, Load returns the old bytes or the new ones, never a mix.
//
// [FileStore] is a ready implementation; a node that keeps its small state
// in a go-datastore can adapt a key of it instead (a datastore Put is
// atomic).
type Store interface {
	Load(ctx context.Context) ([]byte, error)
	Save(ctx context.Context, data []byte) error
}

// FileStore returns a [Store] that keeps the state in the file at path. Save
// writes a temporary file beside it, syncs it, renames it over path and
// syncs the directory, so a crash leaves either the old file or the new
// one. A temporary file left by a crash (path + ".tmp-*") is never read
// and may be deleted. The directory must exist.
func FileStore(path string) Store { return fileStore(path) }

type fileStore string

func (p fileStore) Load(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(string(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("freeze: load state: %w", err)
	}
	return b, nil
}

func (p fileStore) Save(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.save(data); err != nil {
		return fmt.Errorf("freeze: save state: %w", err)
	}
	return nil
}

func (p fileStore) save(data []byte) (err error) {
	path := string(p)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
