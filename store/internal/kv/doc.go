// Package kv implements [store.Store] over any ordered key-value engine. The
// pebble and leveldb backends are thin [Engine] adapters around it, so both
// share one record cache, one key space and one set of semantics.
//
// # Key layout
//
//	0x00 'v' 0x00              schema: version (uvarint) and layout (1 byte)
//	0x00 'n' 0x00              next record ID (8 bytes, big-endian)
//	0x00 'p' 0x00              first record ID with a population (8 bytes)
//	0x01 mh 0x00 ...           index entries, in one of two layouts (below)
//	0x02 id 0x00               value record: provider, context ID, metadata
//	0x03 provider 0x00         provider record (JSON)
//	0x05 ctxKey 0x00           context index: the ID of the record of a
//	                           (provider, context); ctxKey is uvarint(len
//	                           provider) ‖ provider ‖ context ID
//	0x06 id mh 0x00            population entry: mh is in record id's
//	                           context (see store.Sampler); id is 8 bytes,
//	                           big-endian, and the value is empty
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
// which deletes them a batch at a time. A record and its context-index
// entry are written and deleted together, in one batch.
// All and Sweep read records through the cache without filling it, so a
// scan of the whole index does not evict what Get uses.
//
// A database of schema version 1 has no context index: Open builds it
// (deleting first whatever entries an earlier, interrupted build left)
// and then brings the database up to version 3 as for version 2.
//
// # Populations
//
// A record's population entries (0x06‖id‖mh‖0x00) are the set of its
// multihashes, grouped by record and sorted by multihash, which is what
// store.Sampler answers from: the count of a context, and the multihash
// at a position. Every batch that writes or deletes index entries writes
// or deletes the same multihashes' population entries (a Put of a new
// context writes its first ones with the record), so the population is
// the set of multihashes Get finds the context on, after a crash too, and
// a Put that a crash cut short is completed by putting it again. Removing
// a record leaves its entries for Sweep, which skips from one record's
// population to the next with a seek per live record. A population entry
// costs a key of the multihash's length plus 10 bytes beside the index
// entry.
//
// Sample counts a population with one scan, keeping every 1024th
// multihash as an anchor, then finds each position by walking from the
// anchor before it. The count and anchors are cached (4 MiB in all) until
// the population changes, so sampling a context again walks at most 1024
// keys per position. Writers of populations hold one of 256 stripe locks
// shared while they commit and bump its generation; Sample holds its
// stripe alone, so the count and the positions describe one state.
//
// With [Config.NoPopulations] the database keeps none (popFrom is then
// 2⁶⁴-1, recorded); opened again without it, popFrom becomes the next
// record ID, and Sweep deletes the entries of records below popFrom.
//
// Schema version 2 kept, instead, a bounded sample of each context under
// a secret hash key (0x04‖id‖0x00 and 0x00 's' 0x00), which two stores
// drew differently. Open deletes those keys; with the full-key layouts
// ([Entries], [Merged]) it writes every live record's population from a
// scan of the whole index (a one-time cost of one index scan and one
// population entry per entry); [MergedDigestPrefix] keeps digest prefixes,
// not whole multihashes, so it records the next record ID as the first
// with a population, and Sample reports store.ErrNotSampled for the
// contexts stored before until they are removed and put again. Every
// write of the upgrade is idempotent and the new version is recorded
// last, so an upgrade cut short is done again in full.
//
// # Concurrency
//
// A DB is safe for concurrent use. Every call holds a shared guard that
// Close takes alone, so Close waits for calls in flight. Writers of value
// records and of the context index are serialised by one mutex
// (RemoveProvider lets others in between its batches); index writes run
// in parallel, and Sweep briefly holds them off while it deletes emptied
// keys. Readers of records take no lock but their cache shard's; Sample
// holds off the writers of its context's stripe while it reads.
package kv
