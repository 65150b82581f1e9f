// Package querynode is a query node of the keyspace-sharded layer (package
// [keyspace]): it applies the write batches of ingest nodes to any
// [store.Store], copies the ranges it gains in a membership change, drops
// the ranges it loses, and says when it is ready to answer finds.
//
// # Model
//
// A [Node] serves the write side of the [keyspace] HTTP API ([Node.Handler]):
//
//   - Batches ([keyspace.PathBatch]). Per writer the node keeps, durably in
//     [Config].Dir, the stream (the writer's outbox) and the last Seq it
//     applied. A batch at Seq ≤ Applied is a replay: 200, nothing applied.
//     At Applied+1 its ops are applied in order and the node answers 200
//     with a [keyspace.BatchAnswer] naming Applied and Durable. Without
//     Config.CommitInterval the store is flushed and the position written
//     (atomically, synced) before the answer, so Durable = Applied. With
//     it, the node commits in groups: every interval, or once
//     Config.CommitBytes of batches wait, [Node.Run] flushes the store
//     once and saves every writer's position; a writer keeps its batches
//     until they are durable, and a node that restarts resumes from its
//     last commit, the writers sending the rest again. A batch further ahead, or
//     a heartbeat (a batch without ops) ahead of Applied, is a gap: 409
//     naming Applied. A new stream of a known writer restarts its
//     numbering (the writer's outbox was recreated, or its queue for the
//     node was removed when the node left and created again when it came
//     back). A heartbeat with stream 0 says the writer holds no queue for
//     the node: it counts for readiness and leaves the position alone. A
//     batch routed under an epoch newer than the node's
//     layout is refused with 503 until the node adopts that layout, so
//     that every write of a change passes through its copy guard. An
//     UpdateMetadata of a context the node holds nothing of is a no-op
//     (writers send context-wide operations to every node).
//   - Readiness ([Node.Ready], [Node.GateFind]). After every start, the
//     node answers finds only once each writer of its layout has sent a
//     message with Drained set at the Seq the node has applied: nothing
//     older waits for it in that writer's outbox. Once ready it stays
//     ready, until it comes back into the layout after it left (below).
//   - Leaving and rejoining. The node records in Dir the last layout it
//     adopted and whether it named the node. A node out of the layout
//     keeps its store, which nobody reads or writes any more. When a
//     layout names it again (a rejoin under the same name), or is a join
//     of it that began after the last layout it saw itself in (it was
//     removed while stopped, and restarted into its rejoin), what the
//     store holds is stale: removals and metadata changes made while it
//     was out never reached it, and a join only copies puts. So before it
//     takes a batch of that layout the node empties its store (every key
//     and provider record; as long as a scan of the store), forgets its
//     writer positions and becomes not ready; the join's copy and the
//     writers' new streams (see package writer) then fill it. A node
//     restarted in the middle of its own join keeps what it has. A Dir
//     from before the record existed is taken as a member's.
//   - Copies ([keyspace.PathCopy]). In a PhaseCopy layout in which the node
//     gains keys, it pulls [keyspace.PathExport] from every other node of the
//     Current ring; each exports the keys the node gains and of which it
//     is the first owner not in skip. A source that fails is added to
//     skip and the others are asked again, so its keys come from their
//     next owners. Copied writes pass through the copy guard: from the
//     moment the node adopts the layout, live removals, provider-record
//     writes and the latest metadata of each context are recorded (in
//     memory and in a log in Dir, synced before the batch is
//     acknowledged), and a copied Put never resurrects what a live batch
//     removed nor reverts a live metadata update. See guard.go for the
//     reasoning behind each rule. The guard is discarded when the layout
//     leaves PhaseCopy.
//   - Exports ([keyspace.PathExport]): a stream of frames, each a uvarint
//     length and a [keyspace.Batch] (Writer: the node's name, Seq: the frame
//     number): the provider records first, then Put ops grouped by value,
//     at most 16384 multihashes or about 4 MiB per frame, and an empty
//     frame at the end. When several nodes gain keys (a leave: every node
//     of Next), the first export request of an epoch (and set of skipped
//     sources) starts one scan of the store that writes every gaining
//     node's stream to a file of its own under Dir (export-EPOCH…), and
//     each request streams its node's file as it grows: a source scans
//     its store once per epoch, not once per gaining node, and holds on
//     disk about what it exports until the layout moves on (the files go
//     then, at Close, or at the next New). A join, where one node gains,
//     streams from the scan directly.
//
// # Copying by tables
//
// With a store that is a [store.BulkLoader] (store/pebble), a copy loads
// what it pulls as sorted tables instead of Put by Put: each Put the
// guard lets through writes its (provider, context) record at once, as a
// Put would, and its multihashes are gathered; every
// [Config].CopyTableKeys entries the gathered part is sealed, built into
// the store's own keys and sorted on a goroutine while the copy gathers
// the next, and ingested whole. An ingested table is newer than
// everything in the store, so the guard's rules are kept as follows
// (table.go says why each holds): live removals of whole contexts or
// providers deleted the records the table's entries name, and records are
// never reused, so those entries stay invisible; live metadata updates
// are in the records; and each live Remove recorded after the table began
// gathering is re-checked while the table goes in, under the guard's
// lock: what the store did not hold just before is removed again just
// after. Stores that are not BulkLoaders (store/memory, store/leveldb),
// and [Config].CopyKeyByKey, copy Put by Put.
//   - Drops ([keyspace.PathDrop]). In a stable layout, the node removes each
//     key it holds and does not own. With a store that removes ranges
//     ([store.RangeRemover] and [store.SeekScanner]: store/pebble opened
//     without populations, as examples/query opens it), the ring segments
//     the node no longer owns go by range deletions, one write per code
//     and digest length whatever the number of keys ([keyspace.Task].Ranges
//     counts them; their keys are not counted); only the keys not placed
//     by their digest are read and removed one by one. Other stores are
//     read whole and their keys removed one by one. BenchmarkDrop: 1M of
//     2M keys dropped in 12 ms by ranges, in 6.6 s key by key. A node
//     named again after it left (see [Node.SetLayout]) empties its index
//     the same way, with one range.
//
// When a copy or a drop ends, [Config].OnTaskEnd is called: a process
// that keeps its status in etcd publishes the end at once, which the
// coordinator waits for.
//
// Keys in a store keyed on digest prefixes (store/pebble's
// WithDigestPrefixKeys) are exported in that form, which the receiving
// store, keyed the same way, answers for the full multihash: every query
// node of a layer must use the same key layout. The ring places such a
// form where it places the full multihash for every function it reads
// positions from the digest of; for the few it does not (sha2-384,
// sha2-224, sha2-512/224, sha2-512/256), the form does not say where the
// key belongs, so exports send such keys to every gaining node and drops
// keep them.
//
// # Lifecycle
//
// [New] reads the durable state and starts nothing. The caller serves
// [Node.Handler] (and the find API wrapped in [Node.GateFind]), runs
// [Node.Run] for the copy and drop tasks, calls [Node.SetLayout] when the
// layout file changes, and finally cancels Run and calls [Node.Close],
// which waits for the requests in flight. The store outlives the node:
// the caller closes it after Close. Copy and drop progress is kept in
// memory: after a restart the coordinator posts them again; both are
// idempotent.
//
// # Concurrency
//
// A Node is safe for concurrent use. The batches of one writer are
// applied one at a time; those of different writers concurrently, except
// during a copy, when live batches and copied frames take turns through
// the guard.
//
// # Errors
//
// [New] fails with errors wrapping [ErrInvalidConfig] or [ErrState];
// [Node.SetLayout] with errors wrapping [keyspace.ErrStaleEpoch] for an
// older layout; methods after [Node.Close] with [ErrClosed], a second
// concurrent [Node.Run] with [ErrRunTwice]. HTTP answers carry a [keyspace.BatchAnswer] whose Error names
// the problem: 400 for a batch that does not decode (the decoder says at
// which byte), 401 without the token, 421 or 403 from a foreign Host or a
// web page when no token is set (see Security), 409 for a gap or an
// epoch mismatch, 413 for a body over [Config].MaxBatchBytes, 500 when
// the store fails (the position does not advance), 503 while closing or
// behind the batch's epoch. A failed copy or drop reports its error in
// [Node.Status].
//
// # Security
//
// With [Config].Token the batch, export, copy and drop requests need it
// (compared in constant time). Without one the node is meant to listen
// on loopback, which keeps other machines out but not the web pages of a
// browser on this machine, so those requests are then answered only when
// their Host is a loopback address (127.0.0.0/8, [::1]), localhost or one
// of [Config].AllowedHosts, and when no web page sent them: a page whose
// name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its own
// name as Host and gets 421, and a request with an Origin header (a page
// at any origin, whose no-cors POST the browser sends without asking) or
// a Sec-Fetch-Site other than "none" gets 403, each with a
// [keyspace.BatchAnswer] whose Error names the Host or the Origin. The
// ingest nodes' writers send neither header. GET [keyspace.PathStatus]
// stays open: it changes nothing.
package querynode
