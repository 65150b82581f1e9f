package indexernode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	dsleveldb "github.com/ipfs/go-ds-leveldb"
	dspebble "github.com/ipfs/go-ds-pebble"

	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/store/pebble"
)

// The node's state (walker positions, assignments) is a go-datastore on
// Pebble under stateDir. Versions before kept it in go-ds-leveldb under
// legacyStateDir; openState moves it over once.
const (
	stateDir        = "state"
	legacyStateDir  = "datastore"
	stateMigrateDir = "state.migrating"
)

// stateMemTable is the memtable of the state database without a disk
// budget: the state is small (a few keys a publisher, a marker an
// advertisement, and the blocks of the walks in progress), and Pebble
// preallocates each write-ahead log to 110% of it. 4 MiB cost 13 MB more
// of logs on disk and no CPU-second less (examples/scale -shape contexts).
const stateMemTable = 1 << 20

// stateL0Compaction is the read amplification of level 0 at which the
// state database compacts it into the level below (Pebble's default: 4),
// and stateL0StopWrites that at which writes wait for it (default 12,
// which must stay above). The walker's keys of a walk in progress are
// written, then deleted within minutes; with small memtables each
// compaction of level 0 rewrites most of the level below for a few
// flushes' worth of them. Letting 16 sublevels pile up merges four times
// as many at once, and more of them meet their deletes in level 0: 7%
// less of the node's CPU on a chain of small advertisements
// (examples/scale -shape contexts -contexts 100000, two runs each against
// the default), at no more disk. Lookups stay cheap: the state has bloom
// filters on every level.
const (
	stateL0Compaction = 16
	stateL0StopWrites = 64
)

// stateCache is the block cache of the state database. A walk asks it, for
// every advertisement it collects, for keys that are mostly absent
// (done/, seen/ and removed/ markers), and reads back every block it
// queued when it applies it: with a cache of 1 MiB and no bloom filters,
// those lookups read index and data blocks from disk, some 40% of the
// node's CPU on a chain of small advertisements (examples/scale -shape
// contexts).
const stateCache = 8 << 20

// openState opens the node's state datastore under dir, sized to its
// share of budget ([freeze.SplitBudget]; 0: no budget). Its writes are
// synced, as the walker and the handoff registry expect of their
// datastore.
//
// Why Pebble and not goleveldb, which kept it before: goleveldb appends
// to its MANIFEST at every flush and to its LOG at every flush and
// compaction for as long as the process runs (the LOG up to 2 MiB), so a
// frozen node under a small budget, which walks its publishers for good,
// went over its budget on those two files alone (some 15 KiB a minute
// in the demo). Pebble rewrites its MANIFEST past a size
// ([pebble.SizeToBudget]) and logs through slog.
func openState(ctx context.Context, dir string, budget int64, log *slog.Logger) (*dspebble.Datastore, error) {
	path := filepath.Join(dir, stateDir)
	if err := migrateState(ctx, dir, budget, log); err != nil {
		return nil, err
	}
	return openPebbleState(path, budget, log)
}

func openPebbleState(path string, budget int64, log *slog.Logger) (*dspebble.Datastore, error) {
	o := &cpebble.Options{MemTableSize: stateMemTable, Logger: pebble.Logger(log),
		L0CompactionThreshold: stateL0Compaction, L0StopWritesThreshold: stateL0StopWrites}
	// Bloom filters on every level, the last included: most lookups of
	// the walker are of keys that are not there.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = cpebble.TableFilter
	}
	if share := freeze.SplitBudget(budget, 0).State; share > 0 {
		pebble.SizeToBudget(o, share)
	}
	ds, err := dspebble.NewDatastore(path, dspebble.WithPebbleOpts(o), dspebble.WithPebbleWriteOptions(cpebble.Sync),
		dspebble.WithCacheSize(stateCache))
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	return ds, nil
}

// migrateState moves the state a version before this one kept in
// go-ds-leveldb under dir/datastore into Pebble under dir/state. It
// copies every key into dir/state.migrating, syncs and closes it, renames
// it to dir/state, then removes the old directory: a process killed at
// any point finds either no dir/state (and copies again from the start)
// or a complete one (and only removes what is left of the old one).
func migrateState(ctx context.Context, dir string, budget int64, log *slog.Logger) error {
	legacy := filepath.Join(dir, legacyStateDir)
	if _, err := os.Stat(legacy); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	path := filepath.Join(dir, stateDir)
	if _, err := os.Stat(path); err == nil {
		log.Info("state: removing the leveldb state left by a finished migration", "dir", legacy)
		return removeDir(legacy)
	}
	tmp := filepath.Join(dir, stateMigrateDir)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	old, err := dsleveldb.NewDatastore(legacy, nil)
	if err != nil {
		return fmt.Errorf("state: open %s to migrate it: %w", legacy, err)
	}
	n, err := copyState(ctx, old, tmp, budget, log)
	if cerr := old.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("state: migrate %s to Pebble: %w", legacy, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	log.Info("state: moved from leveldb to Pebble", "keys", n, "from", legacy, "to", path)
	return removeDir(legacy)
}

// copyState copies every key of old into a new Pebble state at path, and
// closes it.
func copyState(ctx context.Context, old datastore.Datastore, path string, budget int64, log *slog.Logger) (int, error) {
	nds, err := openPebbleState(path, budget, log)
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
		return fmt.Errorf("state: remove %s: %w", path, err)
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
