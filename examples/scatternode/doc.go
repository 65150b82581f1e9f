// Package scatternode is the front end of an indexkit pool as a library:
// a [Scatter] serves the IPNI find API, and Delegated Routing V1 under
// /routing/v1/ (scatter/routing), over a scatter/gather of other find
// APIs (indexkit indexers, storetheindex, indexstar), with a page for
// people at GET / and its JSON status at GET /status.json (package
// scatter/web; [Config.AssignerURL] adds the assigner's publishers and
// handoffs to them, [Scatter.Stats] are the lookup counters they show),
// GET /health ({"Status":"ok","State":"active","Backends":N}) and GET
// /stats (the sums of the backends' /stats from one round of requests,
// reused for a second; scatter/find/health), the IPNI multihash-sampling
// API under /ipni/v0/sample/ (scatter/find/sample: the first backend to
// answer, each indexer holding its contexts whole; 501 over a keyspace
// ring or layout, whose nodes hold no context whole). The examples/scatter
// program runs one (its documentation is the manual of every flag, the
// config file and the logs).
//
// # Embedding
//
// A program or a test builds a front end from a typed [Config] and the
// listener it binds itself, then runs it:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:0")
//	cfg := scatternode.DefaultConfig()
//	cfg.Backends = []string{"http://10.0.0.1:3000", "http://10.0.0.2:3000"}
//	front, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln})
//	if err != nil { ... }
//	defer front.Close()
//	go front.Run(ctx) // until ctx is done
//	url := front.Addrs().FindURL()
//
// [Scatter.Reload] replaces the backends (timeout, ring, cache) while the
// front end serves, as the binary does on SIGHUP; [Config.Hooks] observe
// each Gather built, which is how the binary feeds its Prometheus metrics.
// A [Config] round-trips through encoding/json (without its Logger and
// Hooks), and [Config.Validate] names the field at fault.
//
// The package parses no flags, takes no signals, and registers nothing
// globally (no default HTTP mux, no default Prometheus registry): those
// are the program's, in examples/internal/cmd/scattercmd.
//
// # Keyspace-sharded query layer
//
// [Config.Layout] (the binary's -layout file) points the front end at the
// query layer of package scatter/keyspace: the backends are the layout's read
// nodes and the ring its read ring, each lookup takes the first complete
// answer of its key's owners, and a Reload with the next epoch's layout
// moves reads as the layout says (to the Next ring in phase moved). GET
// keyspace.PathStatus answers a keyspace.Status of role "frontend" with the
// epoch of the layout in force (0 without one); [Scatter.Status] is the
// same status, for a program to keep under its presence key.
//
// A layout on etcd (the binary's -layout etcd://HOST:PORT[,...]/PREFIX)
// is the program's to follow: it Reloads each epoch the watch hands it,
// and sets [Config.Fenced] to its presence's fence. While Fenced reports
// true (cut off from etcd for longer than the presence's lease is sure to
// last, the coordinator may have moved two epochs on), every lookup that
// would have been complete ends with a *find.PartialError wrapping
// [ErrFenced]: a "not found" is a 502 rather than a 404, results are
// marked incomplete, and the result cache does not hide it.
//
// # Lifecycle
//
// [New] validates the Config (every error names the field) and builds the
// first Gather; it starts no goroutine and dials nothing. [Scatter.Run]
// serves until its context is done, then shuts down within
// Config.ShutdownTimeout and returns only after every goroutine it started
// has exited. [Scatter.Close] releases the listener if Run never ran and
// the idle connections to the backends. Several front ends may run in one
// process.
package scatternode
