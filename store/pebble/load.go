package pebble

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/internal/kv"
)

// loadsDir is the directory, inside the database's, where bulk loads
// write their tables before Pebble ingests them. What is left there after
// a crash is removed at Open.
const loadsDir = "indexkit-loads"

// loadTables writes the tables of bulk loads.
type loadTables struct {
	dir   string
	wopts sstable.WriterOptions
	n     atomic.Uint64 // names the tables written
}

func (e *engine) initLoads(o *pebble.Options, dir string) error {
	tmp := filepath.Join(dir, loadsDir)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	wo := o.Clone()
	wo.EnsureDefaults()
	e.loads.dir = tmp
	e.loads.wopts = wo.MakeWriterOptions(0, e.db.TableFormat())
	return nil
}

var _ kv.TableIngester = (*engine)(nil)

// IngestTable implements kv.TableIngester: it writes one table in the
// loads directory and has Pebble ingest it. Sorted runs are drained
// first, so that the table is newer than every operand committed before.
func (e *engine) IngestTable(fill func(kv.TableWriter) error) error {
	if e.runs != nil {
		if err := e.runs.drain(); err != nil {
			return err
		}
	}
	path := filepath.Join(e.loads.dir, fmt.Sprintf("%06d.sst", e.loads.n.Add(1)))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), e.loads.wopts)
	tw := &tableWriter{w: w}
	if err := fill(tw); err != nil {
		w.Close()
		os.Remove(path)
		return err
	}
	if err := w.Close(); err != nil {
		os.Remove(path)
		return err
	}
	if tw.n > 0 {
		err = e.db.Ingest(context.Background(), []string{path})
	}
	// Pebble links the table into its directory; this name is ours.
	if rerr := os.Remove(path); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	return err
}

type tableWriter struct {
	w *sstable.Writer
	n int
}

func (t *tableWriter) Set(key, value []byte) error   { t.n++; return t.w.Set(key, value) }
func (t *tableWriter) Merge(key, value []byte) error { t.n++; return t.w.Merge(key, value) }

// NewBulkLoad implements [store.BulkLoader]: a load gathers index entries
// and ingests them as one sorted table in the store's own key form (see
// kv.Loader), which is how a query node copies the ranges it gains.
func (s *Store) NewBulkLoad(ctx context.Context) (store.BulkLoad, error) {
	l, err := s.DB.NewLoader(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}
