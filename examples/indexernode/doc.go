// Package indexernode is a complete IPNI indexer node as an importable
// package: the index store of the caller's choice, ingestion of the
// publishers announced or assigned to it (ingest), the freezer (freeze),
// handoffs and the admin API the assigner calls (handoff, assigner/admin),
// the find API (scatter's handler over the store, with Delegated Routing
// V1 under /routing/v1/ beside it) and announce intake over
// HTTP and gossip (ingest/announce). examples/indexer is the same node as a
// program.
//
// The find listener also serves GET /health (naming the node's freeze
// state, active or frozen) and GET /stats (scatter/find/health), and the
// IPNI multihash-sampling API under /ipni/v0/sample/ (scatter/find/sample,
// answered from the store's per-context sample; 501 if the store keeps
// none). The ingest listener keeps its own plain GET /health.
//
// # Embedding a node
//
//	cfg := indexernode.DefaultConfig()
//	cfg.Dir = dir                  // identity key, walker state, assignments, freeze state
//	cfg.Store, cfg.Index = "", st  // any store.Store; or Store "pebble", "leveldb", "memory" under Dir
//	node, err := indexernode.New(ctx, cfg, indexernode.Listeners{Find: ln1, Ingest: ln2, Admin: ln3})
//	...
//	go node.Run(ctx)               // until ctx ends
//	node.Addrs().FindURL()         // http://127.0.0.1:port
//	...
//	node.Close()                   // after Run has returned
//
// [Config] holds every setting, with time.Duration fields and the
// [Hooks] a program turns into metrics; [DefaultConfig] gives the
// program's defaults. The caller binds the [Listeners] (a test passes
// 127.0.0.1:0) and learns the ports from [Node.Addrs]. Each listener is
// optional: a nil one leaves that API unserved.
//
// # Lifecycle
//
// [New] validates the Config (errors name the field), opens the data
// directory and makes every part; it starts nothing but the libp2p host's
// listener, and on error closes what it opened, the listeners included.
// [Node.Run] serves until its context ends, then stops the listeners
// (waiting at most Config.ShutdownTimeout for requests in flight) and
// waits for ingestion to persist where it is; it returns after every
// goroutine it started has exited. [Node.Close] releases the stores (not
// an Index of the caller's) and the host; it is idempotent. Several nodes
// may run in one process, each on its own Dir.
//
// # The program
//
// [Main] is examples/indexer: it parses that command's flags and JSON
// config file, binds the listeners with connection caps, exports
// Prometheus metrics from the hooks, and logs one msg=listening
// name=<x> addr=<host:port> line per listener before msg=starting (the
// pool's process mode reads them). examples/indexer's documentation is
// the manual of every flag.
package indexernode
