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
//	0x05 ctxKey 0x00           context index: the ID of the record of a
//	                           (provider, context); ctxKey is uvarint(len
//	                           provider) ‖ provider ‖ context ID
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
// # Records
//
// A value record is one per (provider, context), and publishers that make
// one context per deal have millions of them, so records stay on disk:
// Open reads none of them and takes the same time however many there are.
// A cache over them ([Config.RecordCache] bytes, split three to one between
// records by ID and context-index entries by ctxKey) serves lookups; a Get
// is one engine read for the multihash plus cache reads, and allocates
// nothing for a multihash with one value whose record is cached; a miss
// reads the record from the engine. The cache is sharded, each shard
// behind its own RWMutex and evicting by CLOCK, so a hit only reads under
// a shard's read lock. Records are replaced, never changed in place, so a
// reader may keep what it got. Writers change the engine first, then the
// cache; a reader that missed adds what it read only if no writer touched
// its shard since it looked, so an update is never undone by a copy read
// before it. A record, once deleted, never comes back (record IDs are
// not reused), so the cache may remember that a record is gone.
//
// The context index gives the record of a (provider, context) for Put,
// Remove, UpdateMetadata and RemoveProviderContext, which touch that one
// record and entry whatever the context's size, and, since every ctxKey
// begins with its provider, the contexts of a provider for RemoveProvider,
// which deletes them a batch at a time. A record, its sample and its
// context-index entry are written and deleted together, in one batch.
// All and Sweep read records through the cache without filling it, so a
// scan of the whole index does not evict what Get uses.
//
// A database of schema version 1 has no context index: Open builds it
// (deleting first whatever entries an earlier, interrupted build left)
// and only then records version 2, so a build cut short is done again.
//
// # Samples
//
// A record created by this code gets a sample key in the batch that creates
// it; a record without one predates samples, and Sample reports
// store.ErrNotSampled for it. Each sample's threshold is cached with the
// context's context-index entry (read with it on a miss): Put hashes its
// multihashes and compares them with it, and reads and rewrites the sample
// key only when some pass, in the batch of its last entries (a new
// context's in the batch that creates it), so it costs no extra commit. Remove takes multihashes out of the sample in
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
// records, of the context index and of samples are serialised by one
// mutex (RemoveProvider lets others in between its batches); index writes
// run in parallel, and Sweep briefly holds them off while it deletes
// emptied keys. Readers of records take no lock but their cache shard's.
package kv
