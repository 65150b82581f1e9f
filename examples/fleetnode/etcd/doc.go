// Package etcd is a fleet Backend in etcd (fleetnode.Backend): the
// catalog in lease/etcd under P+"lease/" for the fleet's key prefix P,
// and each side table entry in a key P+"fleet/<table>/<key>" (addrs,
// repos, settings, handoffs), so that the catalog's watch never sees a
// side table's write. lease/etcd keeps TTL, auction and liveness windows
// as etcd lease TTLs: NewStore refuses any that is not whole seconds.
//
// The etcd client's gRPC imports golang.org/x/net/trace, which registers
// /debug/requests and /debug/events on http.DefaultServeMux: a program
// that serves the default mux should know (package fleetnode itself
// imports no backend).
package etcd
