// Package etcdtest runs real etcd servers for tests: one member or a
// cluster of several on free 127.0.0.1 ports, each a process of the
// test's own with its data directory under the test's temporary
// directory, killed by its PID at the end of the test. It also gives a
// client (go.etcd.io/etcd/client/v3) and a fresh key prefix per test.
//
//	c := etcdtest.Start(t)                     // one member
//	cli := etcdtest.Client(t, c.Endpoints()...)
//	s, err := leaseetcd.New(cli, etcdtest.Prefix(t, cli, "lease"))
//
// # The servers
//
// [Start] runs the binary [Binary] finds (ETCD_BIN, etcd on PATH, or
// Debian etcd-server's /usr/bin/etcd; the tests are written against
// 3.4.23) with fast timings ([HeartbeatMs], [ElectionTimeoutMs]: an
// election takes a fraction of a second and the smallest lease TTL is one
// second), --max-txn-ops [MaxTxnOps], and --logger zap at level warn into
// a log file per member ([Member.LogFile], [Member.Log]); the log is shown
// when a member fails to come up. Start returns once every member answers
// /health with "true". Without the binary it calls [Unavailable]: the test
// fails when the environment variable CI is set and is skipped otherwise.
//
// # Faults
//
// A fault test works on [Cluster.Members]:
//
//   - [Cluster.Leader] finds the current leader (Status on each member's
//     own client port).
//   - [Member.Kill] (SIGKILL), [Member.Stop] (SIGTERM), [Member.Pause]
//     (SIGSTOP) and [Member.Continue] (SIGCONT) signal the process by its
//     PID; Kill and Stop wait until it is reaped.
//   - [Member.Start] starts a stopped member again on its data directory
//     and ports (the initial-cluster flags are then ignored: the member
//     replays its WAL); [Member.Restart] is Kill, Start and WaitReady.
//   - [Cluster.Restart] kills every member and starts them all again on
//     their data directories: what the cluster acknowledged survives.
//
// Ports are fixed per member for the life of the cluster, so clients
// reconnect to a restarted member at the same address.
//
// # Partitions
//
// With [WithProxies] every member's client port and peer port sit behind an
// internal/testbed/netproxy proxy ([Member.ClientProxy], [Member.PeerProxy]) and
// the member advertises the proxies' addresses, so clients and peers reach
// it only through them (its own listeners stay reachable at
// [Member.DirectClientAddr], which this package uses for /health and
// Status). What a proxy per member can isolate follows from how etcd's
// peers talk: member A's raft messages to B travel on a stream that B
// dialed to A's advertised peer address, and snapshots and fallback
// messages from A to B are POSTed to B's address. So:
//
//   - Pausing (or cutting) m's peer proxy stops every raft message m sends
//     on its streams, and everything posted to m; messages its peers send
//     to m on streams m dialed (through their proxies) still arrive. m can
//     neither lead nor commit: as a leader it loses its followers (they
//     elect another), as a follower its proposals and read-index requests
//     go nowhere. It is a one-way partition: m still hears the new leader.
//   - A full two-way partition of m alone cannot be made with one proxy
//     per member: the connections m dialed run through its peers' proxies,
//     together with the peers' traffic between themselves. Pausing every
//     other member's peer proxy as well isolates everyone.
//   - Pausing m's client proxy cuts off the clients that use m (the
//     member keeps working with its peers); the etcd client then fails
//     over to another endpoint if it has one.
//
// Cut closes the open connections, which etcd and its clients redial at
// once; Pause keeps them open and silent, the harder case for timeouts.
//
// # Clients and keys
//
// [Client] connects with a 2 s dial timeout and a silent logger, checks
// the connection with Status and closes the client at the end of the
// test. [Prefix] returns a fresh "indexkit-test/name/<16 hex>/" prefix and
// deletes its keys at the end of the test, best effort. Call Prefix after
// Client, so that the keys are deleted before the client is closed.
//
// Every function that takes a testing.TB must be called from the test's
// goroutine; the Member and Cluster methods may be called from any.
//
// Under -short [Start] skips the test: clusters are the integration
// lane's (internal/testbed/lane), which `make test` runs and `make check`
// does not.
//
// The package has no runnable Example: everything needs the etcd binary,
// and house style allows an Example only with an // Output comment that
// runs without it.
package etcdtest
