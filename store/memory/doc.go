// Package memory is a [store.Store] held entirely in memory: for tests,
// caches and small nodes that can rebuild their index on restart. Nothing is
// persisted; Close drops everything.
//
// # Model
//
// The layout mirrors the disk backends. Every (provider, context ID) has one
// value record, immutable and identified by a uint64 ID that is never reused.
// The multihash index maps each multihash to the IDs of its records, so
//
//   - UpdateMetadata, and a Put that changes the metadata of a stored
//     context, replace one record and every multihash of the context sees
//     the new metadata at once;
//   - RemoveProviderContext and RemoveProvider delete records only. The index
//     entries they orphan are skipped by Get and All, and deleted by
//     [Store.Sweep];
//   - a context that is removed and put again gets a new ID, so its old
//     multihashes do not come back.
//
// Each record also has a population, the set of its multihashes
// (store.Sampler): the strings of the index's keys, shared with it, in a
// sorted slice and a list of those added since it was last sorted, which
// Sample and Remove merge in. A Put adds after writing its index entries,
// a Remove takes out before deleting them, and removing the record drops
// the population at once.
//
// The index is split into 256 shards chosen by a seeded hash of the multihash
// bytes. A shard keeps one inline ID per multihash (the common case, costing
// 8 bytes beside the key) and moves a multihash with several values to a
// side table that holds its IDs sorted.
//
// Values returned by Get and All share their ContextID and Metadata slices
// with the store's records; they must not be modified. Provider records are
// deep-copied on the way in and out, so a caller cannot change the store
// through a [store.ProviderInfo] it passed or received.
//
// # Concurrency
//
// A Store is safe for concurrent use. Each shard has its own RWMutex and the
// value records share one, so writers to different shards do not contend, and
// readers never block each other. No lock is held while yielding: Providers
// copies the records first, and All copies the keys of one shard, then reads
// their values 1024 at a time, releasing every lock before it yields a chunk,
// so the loop body may call the store, even Close. Sweep works one shard at a time and may run beside
// any other call. Close waits for calls in flight, then drops the maps; every
// later call returns an error wrapping [store.ErrClosed].
//
// # Size
//
// [Store.Size] estimates the bytes the store holds: for each multihash its
// key bytes plus a fixed charge for the string header, the inline ID and map
// slack; 8 bytes for each further ID; for each value record its provider,
// context and metadata bytes plus a fixed overhead; 16 bytes for each
// multihash of each population (its bytes are the index's); and a rough
// size for each provider record. It is computed from counters the shards
// keep, so it is cheap to poll, and it tracks real heap use within a small
// factor, not exactly: it ignores allocator size classes and how full each
// map happens to be.
package memory
