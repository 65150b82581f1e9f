// Package assignernode is the assigner role of an indexkit pool as a
// library: an [Assigner] assigns publishers to the indexers of a pool,
// hands them off as indexers freeze and forwards announces (see
// assigner.Service), and [Main] is the examples/assigner program around
// it (whose documentation is the manual of every flag, the config file and
// the logs).
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
// With [Config.P2P] the assigner also runs a libp2p host for gossip
// announces; [Addrs] reports its multiaddrs and peer ID. With
// [Config.P2PVerify] (on in [DefaultConfig]) it verifies the heads of
// publishers that announce only libp2p addresses over libp2p, with that
// host, or without P2P with a host that listens nowhere (not in [Addrs]),
// so that such publishers can be assigned. [Config.Hooks]
// observe what the service does, which is how [Main] feeds its Prometheus
// metrics; [Assigner.Service] gives the service's state and statistics.
//
// # Lifecycle
//
// [New] validates the Config (every error names the field) and builds the
// service and the libp2p host; it starts no goroutine. [Assigner.Run]
// serves and runs the service until its context is done, then shuts down
// within Config.ShutdownTimeout and returns only after every goroutine it
// started has exited. [Assigner.Close] releases the host, and the
// listeners if Run never ran. Several assigners may run in one process.
//
// [Main] parses the flags and the config file, resolves the admin token,
// binds the listeners with the connection caps and logs each as
// msg=listening name=<x> addr=<host:port> (and name=p2p per libp2p
// address) before msg=starting, so a caller that passes 127.0.0.1:0 learns
// the ports from those lines; examples/assigner and the process mode of
// examples/localpool call it.
package assignernode
