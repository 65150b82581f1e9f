// Package pebble is the default [store.Store] backend for indexer nodes: the
// index kept in a Pebble (cockroachdb/pebble) database on disk.
//
// # Layout
//
// Each multihash is one Pebble key holding the IDs of its value records.
// Put adds an ID with a merge operand ([Merger]), so writing never reads,
// however many providers a multihash already has. The (provider, context)
// records themselves, millions for publishers that make one context per
// deal, stay on disk behind a cache ([WithRecordCache], 32 MiB by default),
// so opening takes the same time and memory however many there are. Get
// is one point read plus cache reads, and allocates nothing when a
// multihash has a single value whose record is cached; a record not
// cached costs one more point read. Bloom filters let reads skip files
// without the key. A
// database written by this package records its layout and must be opened
// with [Merger], which Open sets unless [WithOptions] supplies another.
//
// # Durability
//
// Writes are committed without syncing; Flush syncs the write-ahead log, and
// Close flushes. A process killed after Flush returned loses nothing that was
// written before it; a write in flight at the kill is either whole per engine
// batch (up to 4,096 multihashes) or absent, and repeating a Put completes
// it.
//
// # Tuning
//
// [DefaultOptions] is tuned for ingest: 64 MiB memtables and a high L0
// stop-writes threshold, so that writes do not stall, with a 256 MiB block
// cache ([WithCacheSize]) and bloom filters above the last level. The
// memtable size also sizes the disk: Pebble preallocates each write-ahead
// log to 110% of it, some 70 MiB by default however little is stored, so
// a store on a small disk budget sets a small one ([WithMemTableSize]), or
// sizes memtables, logs and MANIFEST to the budget at once
// ([WithDiskBudget]).
// Everything passes through: [WithOptions] takes any *pebble.Options, and
// [Store.Pebble] exposes the database for metrics (read amplification, L0
// file count, compaction debt), checkpoints and manual compactions.
//
// # Lifecycle
//
// [Open] returns a ready store; Close syncs and closes the database and waits
// for calls in flight. A Store is safe for concurrent use. Pebble's own log
// lines are discarded unless [WithLogger] names a *slog.Logger.
package pebble
