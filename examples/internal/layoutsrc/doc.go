// Package layoutsrc is where the keyspace layer's processes (query nodes,
// ingest nodes, front ends) take their layout from: a layout file, as on
// one host, or the etcd layout store of scatter/keyspace/etcdlayout, named
// by the same flag or field:
//
//	-layout layout.json                           a file (keyspace.Load)
//	-layout etcd://HOST:PORT[,HOST:PORT...]/PREFIX  etcd (etcdlayout.ParseURL)
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
// (keyspace.Load's for a file, etcdlayout.ErrNoLayout when nothing was
// ever published).
package layoutsrc
