// Package store defines the index at the heart of every indexer node: a map
// from multihash to the provider values that can serve it, plus one
// [ProviderInfo] record per provider.
//
// # Model
//
// A [Value] is (provider, context ID, metadata). All multihashes that a
// provider publishes under one context ID share one stored value record, and
// each multihash entry points at that record by a short internal ID. This
// indirection is what makes the expensive IPNI operations cheap:
//
//   - [Index.UpdateMetadata] rewrites one record, whatever the number of
//     multihashes.
//   - [Index.RemoveProviderContext] and [Index.RemoveProvider] delete records,
//     not entries. The entries they orphan are skipped by Get and removed
//     later by [Sweeper.Sweep].
//   - A record ID is never reused, so putting a removed context again does
//     not bring its old multihashes back.
//
// Multihashes are stored and compared by their bytes, whatever the codec of
// the CID they came from. A backend may key a long cryptographic digest on
// its first 20 bytes instead ([AppendIndexKey]; store/pebble's
// WithDigestPrefixKeys): lookups are unchanged, and [Store.All] yields
// that form.
//
// # Populations
//
// For the IPNI multihash-sampling API (scatter/find/sample), every
// backend also implements the optional [Sampler]: beside the index it
// keeps, per (provider, context), the context's population, its set of
// multihashes in byte order, updated by Put and Remove in step with the
// index and dropped with the context. Sample answers the spec's question
// (how many multihashes, and which is at position i) from it, so any two
// stores that hold the same context give the same sample for the same
// beacon, whatever order they ingested it in. The population is a second
// copy of each (context, multihash): the disk backends write one more key
// per multihash in the same batch as its index entry, the memory backend
// one more string header.
//
// # Bulk paths
//
// Three more optional interfaces serve a node that moves ranges of keys
// (a query node of the keyspace-sharded layer gaining ranges in a join or
// a leave, and dropping those it gave up): [SeekScanner], All in byte
// order with skips, so that a source reads only the ranges it sends
// (store/pebble and store/leveldb); [BulkLoader], which gathers Puts and
// ingests their index entries as sorted tables (store/pebble), whose
// contract says what an ingest may undo and what it cannot; and
// [RangeRemover], which removes every index entry of spans of multihashes
// with one write (store/pebble without populations: a store that keeps
// them refuses, and the caller removes key by key).
//
// # Backends
//
// This package holds only the interface and the data model; it never imports
// a backend. Pick one of:
//
//   - store/memory: goroutine-safe maps, for tests, caches and small nodes.
//   - store/pebble: the default for nodes (cockroachdb/pebble on disk).
//   - store/leveldb: for deployments that already run LevelDB through
//     go-datastore. go-ds-leveldb syncs every batch commit, so it writes
//     more slowly than pebble.
//
// Every backend passes the conformance suite in store/storetest, and a new
// backend is done when it does.
//
// # Lifecycle and concurrency
//
// A backend's Open or New returns a ready [Store] that starts no background
// work of its own beyond what its engine runs. Every method is safe for
// concurrent use. Close waits for calls in flight, after which every method
// returns an error wrapping [ErrClosed].
//
// # Errors
//
// Failures wrap the sentinels of this package ([ErrNotFound], [ErrClosed],
// [ErrInvalidValue], [ErrInvalidMultihash]) so that callers test them with
// errors.Is; engine errors are wrapped with the operation that failed.
// Bad input is rejected before anything is written, with an error that
// names the problem: "memory: put: store: invalid value: context ID is
// 65 bytes, limit 64".
package store
