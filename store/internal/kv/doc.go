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
//
// # Concurrency
//
// A DB is safe for concurrent use. Every call holds a shared guard that
// Close takes alone, so Close waits for calls in flight. Writers of value
// records are serialised by one mutex; index writes run in parallel, and
// Sweep briefly holds them off while it deletes emptied keys.
package kv
