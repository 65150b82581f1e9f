// Package kv implements [store.Store] over any ordered key-value engine. The
// pebble and leveldb backends are thin [Engine] adapters around it, so both
// share one record cache, one key space and one set of semantics.
//
// # Key layout
//
//	0x00 'v' 0x00              schema: version (uvarint) and layout (1 byte)
//	0x00 'n' 0x00              next record ID (8 bytes, big-endian)
//	0x01 mh 0x00 ...           index entries, in one of two layouts (below)
//	0x02 id 0x00               value record: provider, context ID, metadata
//	0x03 provider 0x00         provider record (JSON)
//
// The index takes one of two [Layout]s. [Merged] keeps one key per multihash,
// 0x01‖mh‖0x00, holding its record IDs, built by the engine's merge operator;
// [Entries] keeps one empty key per (multihash, record ID),
// 0x01‖mh‖0x00‖id‖0x09. Either way a Put never reads and a duplicate Put
// rewrites what is there. Multihashes and peer IDs are self-delimiting, so
// no key is a proper prefix of another and plain byte order groups the
// entries of one multihash together. No key ends in '/' (0x2f), so every key
// is also a valid go-datastore key once prefixed with "/".
//
// Value records are few (one per provider context) and all of them are held
// in memory, so a lookup is one engine read plus map reads.
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
