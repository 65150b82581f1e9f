// Package keyspace splits the index by keyspace: a query layer of nodes that
// each hold the multihashes of their ranges on a consistent-hash ring,
// fed by the publisher-sharded ingest layer that walks advertisement
// chains. It is the "sharding by keyspace" step of the scaling design:
// with publisher sharding alone every lookup asks every indexer; with
// both, a lookup asks the R owners of its key, whatever the size of the
// pool.
//
// # The layers
//
//   - Ingest nodes keep everything an indexer node does with publishers
//     (assignment, announces, syncs, ad tracking, freeze and handoff) and
//     index into a writer store (package writer): a store.Store that
//     routes each multihash to its owners, and provider records and
//     context-wide operations (metadata updates, context removals) to
//     every query node, through a durable outbox per query node on the
//     ingest node's disk (package outbox). The walker's checkpoint
//     flushes the store, and the writer's Flush returns once the outboxes
//     hold every write, so a checkpoint never runs ahead of what will be
//     delivered. An ingest node holds no index: the reference node
//     (examples/indexer -layout) answers lookups on its find listener
//     (/multihash, /cid, /routing/v1/providers, sampling) with 421
//     Misdirected Request, naming the front end and the query nodes as
//     the place to ask, and serves /providers and /health.
//   - Query nodes (package querynode) apply [Batch]es from the writers to
//     any store.Store (Pebble by default) through an authenticated write
//     API, and answer finds for their ranges. Each applies a writer's
//     batches once, in order: a batch delivered twice changes nothing.
//   - Front ends route a lookup to the read owners of its key
//     ([Placement.ReadRing] with scatter.WithRing, hedged by
//     scatter.WithHedge: the primary first, the next owner after a delay
//     or at once if the primary fails; the reference front end,
//     examples/scatter -layout, waits 2 ms by default); the first complete
//     answer wins, and when every owner of a key fails the answer says it
//     is partial (or is 502/504 when nothing was found), never a false
//     404. A batch lookup is split by owner.
//     A query node that restarts answers finds 503 until every writer has
//     told it that nothing older waits for it, so a node still catching
//     up never gives an answer that looks complete.
//
// # Layouts and epochs
//
// A [Layout] is the membership at one epoch: the Current ring and, during
// a change, the Next one with the change's [Phase]. [NewPlacement] turns
// it into owners: where a write goes ([Placement.AppendWriteOwners]: the
// owners on both rings during a change) and where a read goes (Current,
// then Next once the copies are complete).
//
// The one source of the epoch is a [LayoutStore]: a layout file on one
// host ([FileStore], over [Load] and [Save]; processes re-read it on
// SIGHUP or by polling, [WatchFile]) or etcd past one machine (package
// scatter/keyspace/etcdlayout: one key, watches instead of SIGHUP, each
// process's status under its own lease, an elected coordinator). Not the
// assigner's state API: the assigner keeps no state across restarts by
// design and knows nothing of query nodes, while a layout must survive
// every restart. A [Coordinator] publishes each epoch as a
// compare-and-swap on the revision it read ([LayoutStore.Publish]), so
// of two coordinators only one moves an epoch on, and it advances only
// when every process reports (at [PathStatus], or through a
// [StatusSource] such as etcd's liveness keys) that it acts on the
// current one, so no two processes are ever more than one epoch apart;
// the phases are built so that any two adjacent epochs agree (a reader
// of either reads only nodes every writer of either writes to). What the
// coordinator does next is decided by [NextAction], a pure function of
// what it observes and the goal, which the model test drives through
// simulated crashes, lagging processes and rival coordinators, over
// both stores. Since the layout records the phase, a coordinator that
// takes over mid-change (etcdlayout's election) resumes where it stands.
//
// Adding a node: Stable(A) → Copy(A→B): writes go to both rings' owners,
// and once every writer has delivered what it routed under the older
// epoch, the nodes that gain ranges copy them from their owners on A →
// Moved: reads go to B, writes still to both → Stable(B): the old owners
// drop what they no longer own. Removing a node drains it the same way.
//
// # Errors
//
// Decoding errors wrap [ErrInvalidBatch] and say where the input went
// wrong; layout errors wrap [ErrInvalidLayout] and name the field.
//
// # Why the surface is this large
//
// keyspace exports more names than most packages (over 70, counting
// methods) because it is the contract between the two sides of the
// keyspace layer, and both import it: the layout ([Layout], [Node],
// [Load], [Save], [Placement]) and where it is kept ([LayoutStore],
// [FileStore], [Revision], [StatusSource]); the write wire form ([Batch], [Op],
// [OpKind], [AppendOps], [DecodeBatch], [BatchAnswer] and the paths); and
// the coordinator with the reports it reads from writers and query nodes
// ([Coordinator], [CoordinatorConfig], [Goal], [Observation], [Action],
// [ActionKind], [NextAction], [Phase], [Status], [Task], [OutboxStatus],
// [WriterPosition]). The sides themselves live in writer and querynode.
package keyspace
