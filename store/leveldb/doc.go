// Package leveldb is a [store.Store] backend on LevelDB, opened through
// go-ds-leveldb, for deployments that already run LevelDB and go-datastore.
//
// It shares its key layout and semantics with store/pebble (both are built on
// one engine-neutral core), and passes the same conformance suite.
//
// # Durability and speed
//
// go-ds-leveldb syncs every batch commit to disk and offers no way to turn
// that off, so every Put is durable when it returns and Flush has nothing
// left to do. The cost is speed: a Put pays at least one fsync, which makes
// this backend several times slower than store/pebble for ingest. Put
// multihashes in large groups (hundreds to thousands per call) so that the
// fsync is shared.
//
// # Lifecycle
//
// [Open] returns a ready store in the same time however many (provider,
// context) records it holds: they stay on disk, behind a cache of
// [WithRecordCache] bytes. Close syncs and closes the database. A Store is
// safe for concurrent use.
package leveldb
