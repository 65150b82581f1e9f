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
	// A load's index keys are digests, which do not compress, and its
	// population keys share prefixes, which blocks already keep once:
	// compressing its tables costs time for little. Compactions write
	// them again as the levels they reach say.
	e.loads.wopts.Compression = sstable.NoCompression
	return nil
}

var _ kv.TableIngester = (*engine)(nil)

// loadTable is a table written in the loads directory.
type loadTable struct{ path string }

func (t *loadTable) Discard() error {
	if err := os.Remove(t.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// WriteTable implements kv.TableIngester: it writes one table in the
// loads directory.
func (e *engine) WriteTable(fill func(kv.TableWriter) error) (kv.Table, error) {
	path := filepath.Join(e.loads.dir, fmt.Sprintf("%06d.sst", e.loads.n.Add(1)))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), e.loads.wopts)
	tw := &tableWriter{w: w}
	if err := fill(tw); err != nil {
		w.Close()
		os.Remove(path)
		return nil, err
	}
	if err := w.Close(); err != nil {
		os.Remove(path)
		return nil, err
	}
	if tw.n == 0 {
		return nil, os.Remove(path)
	}
	return &loadTable{path: path}, nil
}

// IngestTables implements kv.TableIngester: Pebble ingests the tables in
// one step. Sorted runs are drained first, so that the tables are newer
// than every operand committed before.
func (e *engine) IngestTables(ts ...kv.Table) error {
	paths := make([]string, 0, len(ts))
	for _, t := range ts {
		paths = append(paths, t.(*loadTable).path)
	}
	var err error
	if e.runs != nil {
		err = e.runs.drain()
	}
	if err == nil {
		err = e.db.Ingest(context.Background(), paths)
	}
	// Pebble links the tables into its directory; these names are ours.
	for _, t := range ts {
		err = errors.Join(err, t.Discard())
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
