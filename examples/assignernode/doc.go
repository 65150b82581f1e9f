// Package assignernode is the assigner role of an indexkit pool as a
// library: an [Assigner] assigns publishers to the indexers of a pool,
// hands them off as indexers freeze and forwards announces (see
// assigner.Service). It parses no flags, installs no
// signal handler, starts no libp2p host of its own and registers nothing
// globally (no default mux, no default Prometheus registry); the
// examples/assigner program around it (examples/internal/cmd/assignercmd,
// whose documentation is the manual of every flag, the config file and
// the logs) maps its flags onto [Config] and its hooks onto Prometheus.
//
// # Embedding
//
// A program or a test builds an assigner from a typed [Config] and the
// listeners it binds itself, then runs it:
//
//	announce, _ := net.Listen("tcp", "127.0.0.1:0")
//	state, _ := net.Listen("tcp", "127.0.0.1:0")
//	cfg := assignernode.DefaultConfig()
//	cfg.Service.Indexers = []assigner.ServiceIndexer{{AdminURL: ..., FindURL: ..., IngestURL: ...}}
//	cfg.Service.Replication = 2
//	a, err := assignernode.New(ctx, cfg, assignernode.Listeners{Announce: announce, State: state})
//	if err != nil { ... }
//	defer a.Close()
//	go a.Run(ctx) // until ctx is done
//	publishers announce to a.Addrs().AnnounceURL(); GET a.Addrs().StateURL() + "/assignments"
//
// With a libp2p host in [Listeners].P2P the assigner also takes gossip
// announces and republishes HTTP ones; [Addrs] reports the host's
// multiaddrs and peer ID. With a host in [Listeners].Verify (the same
// one, or one that listens nowhere) it verifies the heads of publishers
// that announce only libp2p addresses over libp2p, so that such
// publishers can be assigned. The caller builds the hosts, with the gater
// ipnisync.NewGater makes of [Config.DialPolicy], and hands them over.
// [Config.Hooks] observe what the service does, which is how the program
// feeds its Prometheus metrics; [Assigner.Service] gives the service's
// state and statistics.
//
// # Lifecycle
//
// [New] validates the Config ([Config.Validate]: every error names the
// field) and builds the service; it starts no goroutine. [Assigner.Run]
// serves and runs the service until its context is done, then shuts down
// within Config.ShutdownTimeout and returns only after every goroutine it
// started has exited. [Assigner.Close] closes the hosts, and the
// listeners if Run never ran. Several assigners may run in one process.
//
// The program parses the flags and the config file, resolves the admin
// token, binds the listeners with the connection caps, starts the hosts,
// and logs each listener as msg=listening name=<x> addr=<host:port> (and
// name=p2p per libp2p address) before msg=starting; examples/assigner and
// the process mode of examples/localpool run it.
package assignernode
