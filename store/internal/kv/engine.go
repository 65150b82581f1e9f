package kv

import "errors"

// ErrNotFound is returned by [Engine.Get] for a missing key.
var ErrNotFound = errors.New("kv: not found")

// Engine is the ordered byte-key store under a [DB].
type Engine interface {
	// NewBatch starts an atomic group of writes.
	NewBatch() Batch
	// Get calls fn with the value of key, valid only during the call, or
	// returns ErrNotFound. An error from fn is returned as is.
	Get(key []byte, fn func(value []byte) error) error
	// Scan calls fn for each key in [lower, upper) in ascending order; a nil
	// upper means no bound. key and value are valid only during the call.
	// An error from fn stops the scan and is returned as is.
	Scan(lower, upper []byte, fn func(key, value []byte) error) error
	// ScanPrefix is Scan over the keys that start with prefix: the lookup
	// path of the [Entries] layout.
	ScanPrefix(prefix []byte, fn func(key, value []byte) error) error
	// Sync makes every committed batch durable.
	Sync() error
	// DiskUsage returns the bytes the engine occupies on disk.
	DiskUsage() (int64, error)
	// Close releases the engine.
	Close() error
}

// Batch is a group of writes committed atomically, in order with other
// batches. The engine copies keys and values, so callers may reuse them.
type Batch interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	// Len returns the number of writes in the batch.
	Len() int
	// Commit applies the batch. It need not be durable until Engine.Sync.
	Commit() error
	// Close releases the batch, committed or not.
	Close() error
}

// OrderFreeIndex is an optional capability of an [Engine] whose index
// writes cost the same in any order, as store/pebble's sorted runs do:
// they sort a whole run when they apply it. The database then writes a
// batch's index entries in the order it was given them instead of sorting
// them first, which an engine built on a skiplist needs and which was 7%
// of a node's CPU at 100M multihashes over sorted runs. Population
// entries, which go to the engine's ordinary writes, are still sorted.
type OrderFreeIndex interface {
	// IndexOrderFree reports whether index writes may come in any order.
	IndexOrderFree() bool
}

// TableIngester is an optional capability of an [Engine]: it writes runs
// of keys as sorted tables apart from the database and then makes them
// part of it at once (Pebble's DB.Ingest). A [DB] over such an engine
// offers [DB.NewLoader].
type TableIngester interface {
	// WriteTable calls fill with the writer of a new table; fill adds keys
	// in strictly ascending order. The table is written apart from the
	// database: nothing of it is visible until IngestTables. A table fill
	// leaves empty is nil, with no error.
	WriteTable(fill func(w TableWriter) error) (Table, error)
	// IngestTables makes the tables part of the database, all at once;
	// their writes are newer than every batch committed before it was
	// called. The key ranges of the tables must not overlap. Ingested or
	// not, the tables are spent.
	IngestTables(ts ...Table) error
}

// Table is a table written by [TableIngester.WriteTable].
type Table interface {
	// Discard deletes a table that is not to be ingested.
	Discard() error
}

// TableWriter adds the writes of one table, in strictly ascending key
// order. A merge value is an operand, as [MergeBatch.Merge] takes it.
type TableWriter interface {
	Set(key, value []byte) error
	Merge(key, value []byte) error
}
