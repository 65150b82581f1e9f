// Package querynode is a query node of the keyspace-sharded layer as an
// importable package: an index store (Pebble by default) that ingest nodes
// write to through the batched, authenticated write API of
// scatter/keyspace/querynode, and that answers the find API (and Delegated
// Routing V1) for the ranges the layout gives it. It talks to no
// publisher. examples/query is the same node as a program
// (examples/internal/cmd/querycmd maps its flags onto [Config]).
//
// # Embedding
//
//	cfg := querynode.DefaultConfig()
//	cfg.Dir, cfg.Name, cfg.Layout = dir, "q1", "layout.json" // or "etcd://127.0.0.1:2379/layer1"
//	n, err := querynode.New(cfg, ln) // ln: the listener of every API
//	...
//	go n.Run(ctx)                    // until ctx ends
//	n.ReloadLayout()                 // after the layout file changes (SIGHUP in the program)
//	n.Close()                        // after Run has returned
//
// One listener serves the find API at /, /routing/v1/, /health and
// /stats, and the shard API under /shard/v1/ (batches, status, export,
// copy, drop). Finds answer 503 until the node is ready: after each start,
// until every writer of the layout has said that nothing older waits for
// it, so a lookup never gets an answer that looks complete from a node
// still catching up; a front end takes the key's other owner meanwhile.
// The shard API's writes need Config.Token when one is set; without one
// they are taken only to a loopback Host or a name of Config.ShardHosts,
// and never from a web page (see the Security section of
// scatter/keyspace/querynode).
//
// # Lifecycle
//
// [New] validates the Config ([Config.Validate] names the field at
// fault), opens the store and the node's state under Dir and starts
// nothing. [Node.Run] serves until its context ends, then stops the
// listener (waiting at most Config.ShutdownTimeout) and the node's copy
// and drop tasks; it runs once ([ErrRunTwice]). [Node.Close] closes the
// store, and the listener if Run never ran. A [Config] round-trips through
// encoding/json (without its Logger).
//
// The package parses no flags, takes no signals and registers nothing
// globally: the program re-reads the layout on SIGHUP, with
// [Node.ReloadLayout], which an embedder calls when it knows the file has
// changed; with [Config].LayoutPoll, Run follows the file by itself
// (keyspace.WatchFile).
//
// # On etcd
//
// With Config.Layout etcd://HOST:PORT[,HOST:PORT...]/PREFIX the layout is
// the one of package scatter/keyspace/etcdlayout: New reads it from etcd,
// Run follows the store's watch (no LayoutPoll or SIGHUP needed) and keeps
// the node's status (Role query, Name Config.Name, the shard's Status)
// under a lease key for as long as it runs, so the coordinator sees the
// node's epoch without asking it; Run revokes the lease when it returns,
// and a node that dies drops out Config.PresenceTTL later.
//
// (Its Pebble store pulls in Pebble's own dependencies, among
// them the Prometheus client, whose import registers expvar's
// /debug/vars on http.DefaultServeMux; the node serves its own mux.)
package querynode
