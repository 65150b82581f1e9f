// Package layoutsrc is where the keyspace layer's processes (query nodes,
// ingest nodes, front ends) take their layout from: a layout file, as on
// one host, or the etcd layout store of scatter/keyspace/etcdlayout, named
// by the same flag or field:
//
//	-layout layout.json                           a file (keyspace.Load)
//	-layout etcd://HOST:PORT[,HOST:PORT...]/PREFIX  etcd ([ParseURL])
//
// [Open] takes either form and returns a [Source]. [Source.Load] reads the
// layout in force; [Source.Follow] keeps a process in step with it (a file
// by polling and on SIGHUP, exactly as keyspace.WatchFile does; etcd by
// the store's watch, with neither); [Source.Join] keeps the process's
// status under a lease (etcd only: a file has no presence, and Join
// returns nil). A front end wraps its presence in a [Fence], which says
// when it must not answer as complete.
//
// # Lifecycle
//
// The role opens a Source in its constructor, runs Follow (and a Fence's
// Run) under its Run, closes the presence when Run returns and the Source
// in its Close. A Source is safe for concurrent use; Close is idempotent.
//
// # Errors
//
// Open fails on a spec that names neither form (an etcd URL that does not
// parse wraps keyspace.ErrInvalidLayout); Load returns the store's errors
// (keyspace.Load's for a file, [ErrNoLayout] when nothing was ever
// published).
//
// # Why not etcd's Go client
//
// A Source speaks to etcd through the JSON gateway every etcd serves on
// its client URLs (POST /v3/kv/range, /v3/watch, /v3/lease/...), with the
// keys and values of scatter/keyspace/etcdlayout, which the coordinator
// uses through etcd's Go client. That client registers etcd's generated
// protobuf file "rpc.proto", and go-libp2p-pubsub, which the ingest node
// links for gossip, registers a file of the same name: a binary that links
// both panics before main (libp2p/go-libp2p-pubsub#729,
// etcd-io/etcd#19682), and the in-process pool links every role. So no
// role package imports etcdlayout or go.etcd.io/etcd; TestSameKeysAsEtcdlayout
// checks that both sides read each other's keys.
package layoutsrc
