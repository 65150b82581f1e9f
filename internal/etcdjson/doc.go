// Package etcdjson is a small etcd v3 client over etcd's JSON gateway
// (the grpc-gateway every etcd 3.4+ server serves under /v3/ on its
// client port): reads, puts, transactions with compares, leases and
// watches, with failover between endpoints. It uses only the standard
// library.
//
// It exists because the official client (go.etcd.io/etcd/client/v3)
// cannot be linked into a program that also links go-libp2p-pubsub: both
// register a protobuf file named "rpc.proto", and the protobuf runtime
// panics at start on the conflict (libp2p/go-libp2p-pubsub#729). Every
// process of the keyspace layer that ingests (and so gossips) must reach
// etcd, so the layer's control plane (scatter/keyspace/etcdlayout) talks
// JSON. The lease store (lease/etcd) keeps the official client: the fleet
// links no pubsub.
//
// Numbers that are int64 in etcd's API travel as JSON strings, keys and
// values as base64, as the gateway's proto3 JSON mapping has them.
package etcdjson
