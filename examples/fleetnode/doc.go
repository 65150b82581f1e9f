// Package fleetnode is the node of the in-memory serving fleet as a
// library: it wins git repositories of a catalog at auction (lease and
// lease/agent), shallow-clones each at the catalog's commit, indexes it in
// memory for substring search (codeindex), answers the queries for what
// it holds and routes the others to their owners. It parses no flags,
// installs no signal handler and registers nothing globally; the
// examples/fleet program around it (whose documentation is the manual of
// every flag, the sim and the demo) maps its flags onto Config and adds
// Prometheus metrics and a trace file through Config.Hooks,
// Config.Routes and Config.Tracer.
//
// # Embedding
//
// A program or a test picks a Backend (fleetnode/redis, fleetnode/etcd,
// or fleetnode/memory for nodes in one process), builds a node from a
// typed Config and the listener it binds itself, and runs it:
//
//	b := fleetredis.New(rdb) // a go-redis client with MaxRetries -1
//	cfg := fleetnode.DefaultConfig()
//	cfg.Name, cfg.Prefix = "node-a", "fleet:"
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	n, err := fleetnode.New(cfg, b, ln)
//	if err != nil { ... }
//	defer n.Close()
//	go n.Run(ctx) // until ctx is done
//	fleetnode.PutCatalog(ctx, b.Tables(cfg.Prefix), n.Store(), entries, 1)
//	code, res, refusal, err := fleetnode.Search(ctx, hc, n.Addr(), "repo-0001", "marker", 10)
//
// The node imports no backend, so a program links only the client of the
// store it uses. The nodes of a fleet must share the Backend's store,
// the key prefix and Timing (the store's options travel with each call).
//
// # Lifecycle
//
// New validates the Config (every error names the field), makes the lease
// store and the agent.Manager, and starts no goroutine. Run publishes the
// node's address in the fleet's address table, serves the HTTP API
// (Handler) and runs the manager until its context is done; then it stops
// in order: it offers its ready indexes to their next owners
// (Config.HandoffWait), lets the manager drain and release, keeps serving
// the offered indexes until they are fetched, stops the server and
// removes its address. Close releases the store and, if Run never ran,
// the listener. Several nodes may run in one process.
//
// # What a node does with a won repo
//
// Its indexer loads the index a stopping node offered (GET /snapshot on
// that node, checked as a snapshot file and against the offered commit),
// else a snapshot in Config.SnapshotDir, else fetches the commit with git
// (depth 1, the user's git configuration and Config.CredentialHelpers, no
// terminal prompt), checks the checked-out commit and indexes the tree;
// an index built from git is written to SnapshotDir. The index's
// accounted size is what the manager charges to Config.Budget. Every
// Timing.VerifyEvery the node checks each index against the checksum taken
// at build: a corrupted one is dropped at once (queries are told it is
// warming), counted and rebuilt.
//
// # Side tables
//
// Beside the catalog a fleet keeps Tables: node addresses (for routing and
// handoffs), clone URLs (PutCatalog writes them), settings that every node
// applies at its next heartbeat (SettingMaxBids, SettingRehydrate) and the
// handoffs of stopping nodes. Each Backend keeps them in its own store;
// fleetnode/tabletest is their conformance suite.
package fleetnode
