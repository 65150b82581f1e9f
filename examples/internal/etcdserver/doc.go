// Package etcdserver runs a local etcd cluster for the example programs
// that start their own (the fleet's demo and sim, the local pool's
// keyspace layer): members as processes of the program, on free
// 127.0.0.1 ports, with short timings, stopped by their PIDs. Tests use
// internal/testbed/etcdtest instead, which ties the servers to a test.
package etcdserver
