package querynode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/scatter/keyspace"
	qn "github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

// Config is a query node's configuration; start from [DefaultConfig].
type Config struct {
	// Dir is the data directory: the index under Dir/index and the
	// node's positions and copy guard under Dir/shard. Required.
	Dir string
	// Name is the node's name in the layout. Required.
	Name string
	// Layout is the layout file ([keyspace.Load]). Required.
	Layout string
	// Store is the index backend: "pebble" or "memory" (whose index is
	// lost at each stop: only for tests and demos).
	Store string
	// Token is the bearer token the shard API requires ("": none; the
	// node then answers shard writes only to a loopback Host or one of
	// ShardHosts, and none that a web page sent).
	Token string
	// ShardHosts are the Host names, besides 127.0.0.0/8, [::1] and
	// localhost, under which the shard API without a Token takes writes
	// (a name the layout gives the node): querynode.Config.AllowedHosts.
	ShardHosts []string
	// IndexCacheSize is the Pebble block cache in bytes (0: the pebble
	// package's default).
	IndexCacheSize int64
	// CommitInterval is how long applied batches may wait to be made
	// durable together (querynode.Config.CommitInterval; 0: each batch
	// before it is answered); 16 MiB of batches commit at once. Writers
	// keep a batch until it is durable. The default, 5 s, lets a commit
	// gather enough for the index's sorted runs to reach Pebble as
	// tables, not through its memtable.
	CommitInterval time.Duration
	// ShutdownTimeout bounds the wait for requests in flight.
	ShutdownTimeout time.Duration
	// Logger receives the node's log (nil: discard).
	Logger *slog.Logger
}

// DefaultConfig is examples/query without flags.
func DefaultConfig() Config {
	return Config{Dir: "./query-data", Store: "pebble", Layout: "layout.json", IndexCacheSize: 32 << 20,
		CommitInterval: 5 * time.Second, ShutdownTimeout: 10 * time.Second}
}

// Node is a running query node.
type Node struct {
	cfg  Config
	log  *slog.Logger
	st   store.Store
	node *qn.Node
	srv  *http.Server
	ln   net.Listener
}

// New opens the node; on error it closes ln and what it opened.
func New(cfg Config, ln net.Listener) (*Node, error) {
	n, err := open(cfg, ln)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		if n != nil {
			n.Close()
		}
		return nil, err
	}
	return n, nil
}

func open(cfg Config, ln net.Listener) (*Node, error) {
	switch {
	case cfg.Dir == "":
		return nil, errors.New("Config.Dir must not be empty")
	case cfg.Name == "":
		return nil, errors.New("Config.Name must not be empty")
	case cfg.Layout == "":
		return nil, errors.New("Config.Layout must name the layout file")
	case cfg.Store != "pebble" && cfg.Store != "memory":
		return nil, fmt.Errorf("Config.Store %q: want pebble or memory", cfg.Store)
	case ln == nil:
		return nil, errors.New("no listener")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l, err := keyspace.Load(cfg.Layout)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	n := &Node{cfg: cfg, log: log, ln: ln}
	if cfg.Store == "memory" {
		n.st = memory.New()
	} else {
		// A query node holds part of every context, so it keeps no
		// context populations: it does not serve the sampling API.
		opts := []pebble.Option{pebble.WithLogger(log), pebble.WithDigestPrefixKeys(), pebble.WithMemTableSize(32 << 20), pebble.WithSortedRuns(32 << 20), pebble.WithoutPopulations()}
		if cfg.IndexCacheSize > 0 {
			opts = append(opts, pebble.WithCacheSize(cfg.IndexCacheSize))
		}
		if n.st, err = pebble.Open(filepath.Join(cfg.Dir, "index"), opts...); err != nil {
			return nil, fmt.Errorf("index store: %w", err)
		}
	}
	if n.node, err = qn.New(qn.Config{Name: cfg.Name, Dir: filepath.Join(cfg.Dir, "shard"), Store: n.st, Token: cfg.Token,
		AllowedHosts: cfg.ShardHosts, CommitInterval: cfg.CommitInterval, Logger: log}, l); err != nil {
		return n, err
	}
	backend, err := find.NewStoreBackend(n.st)
	if err != nil {
		return n, err
	}
	findAPI, err := find.NewHandler(backend, find.WithLogger(log))
	if err != nil {
		return n, err
	}
	routingAPI, err := routing.New(backend, routing.WithLogger(log))
	if err != nil {
		return n, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", n.node.GateFind(findAPI))
	mux.Handle(routing.Prefix, n.node.GateFind(routingAPI))
	conv := health.NewHandler(health.Config{Store: n.st, Logger: log})
	mux.Handle("/health", conv)
	mux.Handle("/stats", conv)
	mux.Handle(keyspace.PathPrefix, n.node.Handler())
	n.srv = cli.NewHTTPServer(mux, log)
	// A batch of 64 MiB on a slow link takes longer than the default
	// timeouts allow.
	n.srv.ReadTimeout, n.srv.WriteTimeout = 5*time.Minute, 0
	return n, nil
}

// URL is the base URL of the node's APIs.
func (n *Node) URL() string { return "http://" + n.ln.Addr().String() }

// Shard is the node's shard API, for its status and readiness.
func (n *Node) Shard() *qn.Node { return n.node }

// Store is the node's index.
func (n *Node) Store() store.Store { return n.st }

// ReloadLayout re-reads the layout file; a layout that does not load or
// is older than the one in force is refused and the node keeps its own.
func (n *Node) ReloadLayout() error {
	l, err := keyspace.Load(n.cfg.Layout)
	if err != nil {
		return err
	}
	if err := n.node.SetLayout(l); err != nil {
		return err
	}
	n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
	return nil
}

// Run serves until ctx ends.
func (n *Node) Run(ctx context.Context) error {
	l := n.node.Layout()
	n.log.Info("starting", "name", n.cfg.Name, "dir", n.cfg.Dir, "store", n.cfg.Store, "epoch", l.Epoch, "phase", l.Phase)
	eg, gctx := errgroup.WithContext(ctx)
	cli.Serve(gctx, eg, "query", n.srv, n.ln, n.cfg.ShutdownTimeout)
	eg.Go(func() error { return n.node.Run(gctx) })
	return cli.WaitStopped(gctx, eg, n.log)
}

// Close closes the node's state and store.
func (n *Node) Close() error {
	var errs []error
	if n.node != nil {
		errs = append(errs, n.node.Close())
	}
	if n.st != nil {
		errs = append(errs, n.st.Close())
	}
	return errors.Join(errs...)
}
