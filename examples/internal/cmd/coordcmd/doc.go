// Package coordcmd is the coordinator command (examples/coordinator): it
// maps the command line onto one membership change of a keyspace-sharded
// query layer (package scatter/keyspace).
//
// With an etcd layout (-layout etcd://HOST:PORT/PREFIX) it campaigns in
// the layer's election (scatter/keyspace/etcdlayout) and, once elected,
// drives the change from the statuses every process keeps in etcd: no
// list of processes to give. Run a second instance as a standby (same
// -layout, no goal or the same goal): if the elected one dies, the
// standby wins once the term's lease expires (-ttl) and finishes the
// change from the phase the layout records. -seed publishes a first
// layout into an empty prefix.
//
// With a layout file (one host) it drives the change as the local pool
// does, asking the processes it is told of (-ingest, -fronts) for their
// statuses.
//
// The command exits 0 when the change is done (the old owners dropped
// what they no longer own) and on SIGINT or SIGTERM, 1 on an error.
package coordcmd
