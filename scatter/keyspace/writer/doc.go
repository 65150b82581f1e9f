// Package writer is the store of an ingest node in the keyspace-sharded
// layer (package keyspace): a store.Store that keeps nothing of the index
// itself and sends every write to the query nodes that own it.
//
// # Routing
//
// A [Writer] routes by the layout it was given ([New], [Open],
// [Writer.SetLayout], or [Writer.ReloadFile], which reads the layout file
// again):
//
//   - Put and Remove go, multihash by multihash, to the write owners of
//     each key ([keyspace.Placement.AppendWriteOwners]: R nodes, or the owners
//     on both rings during a change);
//   - context-wide operations (UpdateMetadata, RemoveProviderContext,
//     RemoveProvider) and provider records go to every query node of the
//     layout, as one op each, so they cost O(1) per query node whatever the
//     number of multihashes they cover.
//
// The ops for each query node gather in memory and are sealed, at
// Config.BatchBytes or at the next Flush, into one [keyspace.Batch] in that
// node's queue of the outbox (package outbox), tagged with the epoch they
// were routed under.
//
// # Durability
//
// [Writer.Flush] seals what is gathered and syncs the outbox; when it
// returns, every write made before it survives a kill of the process and
// will be delivered. The ingest walker flushes its store before it records
// a walk position, so the checkpoint never runs ahead of the outbox: a
// killed ingest node re-applies the advertisements after its last
// checkpoint, and the query nodes apply the same writes again, which
// changes nothing.
//
// # Delivery
//
// [Writer.Run] runs one loop per query node: it sends the batches the
// node has not applied, one at a time and in order, and acknowledges each
// in the outbox once the node says it is durable (a node that commits in
// groups says so a little later; the loop asks with heartbeats while it
// waits, and after a node's restart sends again from the position the
// node reports); on an error it retries with exponential
// backoff and full jitter (Config.MinBackoff to MaxBackoff) until the node
// takes it. A node applies each writer's batches once and in order (by the
// stream and sequence numbers of the node's queue in the outbox), so a
// batch sent twice, after an answer was lost, changes nothing. When
// nothing waits for a node, the loop sends it a heartbeat every
// Config.Heartbeat saying so (with stream 0 when the outbox holds no
// queue for it); a query node that restarts answers finds only after
// every writer has said it.
//
// # Leaving and rejoining
//
// [Writer.SetLayout] removes the queue of each query node the new layout
// no longer names: what waited for it is dropped, since its ranges have
// moved to other owners. If a node of that name comes back, in a later
// layout, its queue is created again with a new stream whose Seqs start
// at 1 (see package outbox): the node takes it as a stream it has not
// seen, whether it comes back with a fresh store or on its old one (which
// the query node empties when it is named again: see package querynode),
// and no batch is lost or applied twice. The delivery loop follows the
// stream of the queue: it acknowledges a batch only in the stream it was
// sent in, and starts over at Seq 1 when the stream changes.
//
// # Reads
//
// A Writer answers provider records from Config.Records, which it keeps
// up to date, but not the index: Get and All return [ErrNoIndex]. Ask a
// front end, which routes each lookup to the key's owners. An ingest node
// wraps its find API in [Writer.NoIndex], which answers the lookups (as
// the node defines them) 421 Misdirected Request and says where to ask.
//
// # Lifecycle and concurrency
//
// [New] takes an outbox the caller opened and closes; [Open] opens one of
// its own in dir/[OutboxDir], which Close closes, and a Writer opened
// again on the same dir delivers what the last one left. Neither starts
// anything. Run delivers until its context ends and returns after its
// goroutines exit; Close (after Run has returned) flushes, refuses later
// writes and closes the outbox Open opened, but never Records; a second
// Close returns nil. A Writer is safe for concurrent use. [Writer.Status] and [Writer.Handler] (which serves
// [keyspace.PathStatus]) report the epoch and each outbox, for a
// coordinator.
package writer
