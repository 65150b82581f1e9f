package pebble

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	dspebble "github.com/ipfs/go-ds-pebble"
)

// The tuning of OpenDatastore. The state is small (a few keys a
// publisher, a marker an advertisement, and the blocks of the walks in
// progress), so:
//
//   - datastoreMemTable: Pebble preallocates each write-ahead log to 110%
//     of the memtable; 4 MiB cost 13 MB more of logs on disk and no
//     CPU-second less (examples/scale -shape contexts).
//   - datastoreL0Compaction, datastoreL0StopWrites: the walker's keys of a
//     walk in progress are written, then deleted within minutes; with
//     small memtables each compaction of level 0 rewrites most of the
//     level below for a few flushes' worth of them. Letting 16 sublevels
//     pile up (Pebble's default: 4; writes wait at 64, which must stay
//     above) merges four times as many at once, and more of them meet
//     their deletes in level 0: 7% less of the node's CPU on a chain of
//     small advertisements, at no more disk.
//   - datastoreCache: a walk asks, for every advertisement it collects,
//     for keys that are mostly absent (done/, seen/ and removed/
//     markers), and reads back every block it queued when it applies it:
//     with a cache of 1 MiB and no bloom filters, those lookups read
//     index and data blocks from disk, some 40% of the node's CPU.
const (
	datastoreMemTable     = 1 << 20
	datastoreL0Compaction = 16
	datastoreL0StopWrites = 64
	datastoreCache        = 8 << 20
)

// OpenDatastore opens (creating) a go-datastore on Pebble in dir for a
// node's small persisted state (walker positions, assignments, the
// handoff registry), tuned for it: small memtables, bloom filters on
// every level (most of the walker's lookups are of keys that are not
// there), an 8 MiB block cache, and every write synced, as the walker and
// the registry expect of their datastore. budget, when positive, is the
// disk the datastore is sized to as [WithDiskBudget] sizes a store
// (freeze.SplitBudget gives a node's share). log receives Pebble's log
// (nil: discard).
//
// Why Pebble and not goleveldb: goleveldb appends to its MANIFEST at every
// flush and to its LOG at every flush and compaction for as long as the
// process runs, so a frozen node under a small budget, which walks its
// publishers for good, went over its budget on those two files alone.
// Pebble rewrites its MANIFEST past a size ([SizeToBudget]) and logs
// through slog.
func OpenDatastore(dir string, budget int64, log *slog.Logger) (*dspebble.Datastore, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &pebble.Options{MemTableSize: datastoreMemTable, Logger: Logger(log),
		L0CompactionThreshold: datastoreL0Compaction, L0StopWritesThreshold: datastoreL0StopWrites}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
	}
	if budget > 0 {
		SizeToBudget(o, budget)
	}
	o.FS = growLogs(nil)
	ds, err := dspebble.NewDatastore(dir, dspebble.WithPebbleOpts(o), dspebble.WithPebbleWriteOptions(pebble.Sync),
		dspebble.WithCacheSize(datastoreCache+2*datastoreMemTable)) // memtables count against it: see pebbleOptions
	if err != nil {
		return nil, fmt.Errorf("pebble: datastore %s: %w", dir, err)
	}
	return ds, nil
}
