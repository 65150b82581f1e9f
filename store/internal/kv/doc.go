// Package kv implements [store.Store] over any ordered key-value engine. The
// pebble and leveldb backends are thin [Engine] adapters around it, so both
// share one record cache, one key space and one set of semantics.
//
// # Key layout
//
//	0x00 'v' 0x00              schema: version (uvarint) and layout (1 byte)
//	0x00 'n' 0x00              next record ID (8 bytes, big-endian)
//	0x00 's' 0x00              the secret key of the sample hash (8 bytes)
//	0x01 mh 0x00 ...           index entries, in one of two layouts (below)
//	0x02 id 0x00               value record: provider, context ID, metadata
//	0x03 provider 0x00         provider record (JSON)
//	0x04 id 0x00               the sample of record id (see store.Sampler)
//
// The index takes one of three [Layout]s. [Merged] keeps one key per
// multihash, 0x01‖mh‖0x00, holding its record IDs, built by the engine's
// merge operator; [MergedDigestPrefix] does the same with the multihash's
// digest prefix form (store.AppendIndexKey), 0x01‖form‖0x00; [Entries]
// keeps one empty key per (multihash, record ID), 0x01‖mh‖0x00‖id‖0x09.
// A batch of index writes is written in key order, which is what a
// skiplist memtable inserts fastest. Either way a Put never reads and a duplicate Put
// rewrites what is there. Multihashes and peer IDs are self-delimiting, so
// no key is a proper prefix of another and plain byte order groups the
// entries of one multihash together. No key ends in '/' (0x2f), so every key
// is also a valid go-datastore key once prefixed with "/".
//
// Value records are few (one per provider context) and all of them are held
// in memory, so a lookup is one engine read plus map reads.
//
// # Samples
//
// A record created by this code gets a sample key in the batch that creates
// it; a record without one predates samples, and Sample reports
// store.ErrNotSampled for it. Only each sample's threshold is held in memory
// (8 bytes a context): Put hashes its multihashes and compares them with it,
// and reads and rewrites the sample key only when some pass, in the batch
// of its last entries (a new context's in the batch that creates it), so
// it costs no extra commit. Remove takes multihashes out of the sample in
// the batch of its first deletions, and deleting a record deletes its
// sample key in the same batch, so a sample never names a multihash that
// Get does not find, also after a crash. Sample updates are serialised with
// the writers of value records (recMu), which also orders them against
// RemoveProviderContext.
//
// # Concurrency
//
// A DB is safe for concurrent use. Every call holds a shared guard that
// Close takes alone, so Close waits for calls in flight. Writers of value
// records are serialised by one mutex; index writes run in parallel, and
// Sweep briefly holds them off while it deletes emptied keys.
package kv
