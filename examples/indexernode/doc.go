// Package indexernode is a complete IPNI indexer node as an importable
// package: the index store of the caller's choice, ingestion of the
// publishers announced or assigned to it (ingest), the freezer (freeze),
// handoffs and the admin API the assigner calls (handoff, ingest/admin),
// the find API (scatter's handler over the store, with Delegated Routing
// V1 under /routing/v1/ beside it) and announce intake over
// HTTP and gossip (ingest/announce). examples/indexer is the same node as a
// program.
//
// The find listener also serves GET /health (naming the node's freeze
// state, active or frozen) and GET /stats (scatter/find/health), and the
// IPNI multihash-sampling API under /ipni/v0/sample/ (scatter/find/sample,
// answered from the store's population of each context, so every indexer
// holding a context answers a beacon alike; 501 if the store keeps none). The ingest listener keeps its own plain GET /health.
//
// The admin listener requires Config.AdminToken when one is set. Without
// one it answers only requests to a loopback Host (127.0.0.0/8, [::1],
// localhost) or to a name of Config.AdminHosts, and none that a web page
// sent (421 for another Host, a DNS-rebound page's; 403 for a request
// with an Origin header): see the Security section of ingest/admin.
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
// program's defaults, and [Config.Validate] names the field of a bad
// value ([ConfigError]). A Config goes through encoding/json unchanged
// but for what cannot be data (Index, Logger, Hooks), so a program can
// hand one to a child process. The caller binds the [Listeners] (a test passes
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
// # Find latency under load
//
// BenchmarkNodeFind measures the find listener as served (connection caps,
// timeouts, one mux, the metrics wrapper, the handler over Pebble or
// memory) against a raw net/http handler answering the same bytes, in the
// same run, with and without a goroutine ingesting at full rate. Its
// profiles show where a lookup's time goes besides the raw handler's:
//
//   - Pebble's Get (memtable skiplist, SSTable seek, block cache), the
//     main cost of a lookup over a Pebble index; during ingest it grows
//     with the memtables a lookup searches.
//   - The garbage collector. With the small live heap of a Pebble node
//     (the index lives outside the Go heap), ingest's allocations start a
//     cycle every few megabytes; each cycle stops the world twice, and
//     on a busy machine those stops, not the lookups, make the p99 of the
//     find API and of the raw handler alike. A node that must answer fast
//     while it ingests runs with a higher GOGC (400: a quarter of the
//     cycles) and GOMEMLIMIT at its memory budget, which bounds the heap
//     the higher GOGC would let grow. The memory store, whose index is in
//     the heap, pays the opposite: few cycles, each marking the whole
//     index.
//   - Not lock contention: the provider records the find backend caches
//     are renewed by one lookup before they expire (find.WithProviderTTL),
//     and a store lookup holds no lock that an ingesting writer holds for
//     longer than a map update.
//
// # Ingest node of a keyspace-sharded layer
//
// With [Config].Shard the node indexes into the query nodes of a layout
// ([ShardConfig]). ShardConfig.Layout names a layout file, re-read by
// [Node.ReloadLayout] (the program's SIGHUP), or an etcd layout,
// etcd://HOST:PORT[,HOST:PORT...]/PREFIX (package
// scatter/keyspace/etcdlayout): Run then follows the store's watch and
// keeps the writer's status (Role ingest, Name ShardConfig.Name) under a
// lease key for as long as it runs, revoked when Run returns; a node that
// dies drops out ShardConfig.PresenceTTL later (examples/internal/layoutsrc
// takes either form).
//
// # The program
//
// examples/indexer is this node behind a command line; its code is
// examples/internal/cmd/indexercmd, which maps flags or a JSON file onto
// [Config], binds the listeners with connection caps, and turns [Hooks]
// into Prometheus metrics. This package parses no flags, serves no
// profiles, handles no signals and registers nothing in the process's
// globals (the default HTTP mux, Prometheus's default registry: the
// libp2p host's metrics go to a registry of its own), so that several
// nodes can run in one program beside the embedder's own.
package indexernode
