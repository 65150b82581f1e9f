// Command coordinator drives a membership change of a keyspace-sharded
// query layer: it adds a query node (-join NAME=URL), removes one
// (-leave NAME), or finishes the change in progress.
//
//	coordinator -layout etcd://127.0.0.1:2379/pool -join query-4=http://127.0.0.1:3104
//
// On etcd it is elected (start one per host for failover: a standby takes
// over mid-change when the elected one dies); on a layout file it works
// on one host. See examples/internal/cmd/coordcmd for the flags.
package main
