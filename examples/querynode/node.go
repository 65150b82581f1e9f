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
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/internal/localonly"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	qn "github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

// Config is a query node's configuration; start from [DefaultConfig] and
// set Dir, Name and Layout. [Config.Validate] checks it; New does so too.
//
// A Config round-trips through encoding/json, durations as nanoseconds,
// without its Logger (`json:"-"`), so that a program can hand one to
// another process. Its Token goes with it: keep such JSON as secret as the
// token.
type Config struct {
	// Dir is the data directory: the index under Dir/index and the
	// node's positions and copy guard under Dir/shard. Required.
	Dir string
	// Name is the node's name in the layout. Required.
	Name string
	// Layout is the layout file ([keyspace.Load]), or an etcd layout
	// etcd://HOST:PORT[,HOST:PORT...]/PREFIX (package
	// scatter/keyspace/etcdlayout): Run then follows the store's watch
	// and keeps the node's status under a lease for as long as it runs.
	// Required.
	Layout string
	// LayoutPoll, when positive, is how often Run reads the layout file
	// to take a new layout as soon as it is written ([keyspace.WatchFile]);
	// 0 takes one only when [Node.ReloadLayout] is called (the program's
	// SIGHUP). An etcd layout needs neither.
	LayoutPoll time.Duration `json:",omitempty"`
	// PresenceTTL is the lease TTL of the node's status key with an etcd
	// layout (0: 5 s, etcdlayout.DefaultTTL; whole seconds).
	PresenceTTL time.Duration `json:",omitempty"`
	// Store is the index backend: "pebble" or "memory" (whose index is
	// lost at each stop: only for tests and demos).
	Store string
	// Token is the bearer token the shard API requires ("": none; the
	// node then answers shard writes only to a loopback Host or one of
	// ShardHosts, and none that a web page sent).
	Token string `json:",omitempty"`
	// ShardHosts are the Host names, besides 127.0.0.0/8, [::1] and
	// localhost, under which the shard API without a Token takes writes
	// (a name the layout gives the node): querynode.Config.AllowedHosts.
	ShardHosts []string `json:",omitempty"`
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
	// CopyKeyByKey copies the keys the node gains Put by Put instead of
	// as sorted tables (querynode.Config.CopyKeyByKey): the baseline of
	// the scale benchmark's join.
	CopyKeyByKey bool `json:",omitempty"`
	// ShutdownTimeout bounds the wait for requests in flight.
	ShutdownTimeout time.Duration
	// Logger receives the node's log (nil: discard).
	Logger *slog.Logger `json:"-"`
}

// DefaultConfig is examples/query without flags: Dir ./query-data, Layout
// layout.json, the pebble store with a 32 MiB block cache, a 5 s commit
// interval and a 10 s shutdown. Name is empty.
func DefaultConfig() Config {
	return Config{Dir: "./query-data", Store: "pebble", Layout: "layout.json", IndexCacheSize: 32 << 20,
		CommitInterval: 5 * time.Second, ShutdownTimeout: 10 * time.Second}
}

// Validate reports the first field of c at fault, naming it: what New
// would refuse before it opens anything.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("querynode: Config.Dir must not be empty")
	case c.Name == "":
		return errors.New("querynode: Config.Name must not be empty")
	case c.Layout == "":
		return errors.New("querynode: Config.Layout must name the layout file or etcd://HOST:PORT/PREFIX")
	case c.PresenceTTL < 0 || c.PresenceTTL%time.Second != 0:
		return fmt.Errorf("querynode: Config.PresenceTTL %v must be whole seconds, not negative", c.PresenceTTL)
	case c.Store != "pebble" && c.Store != "memory":
		return fmt.Errorf("querynode: Config.Store %q: want pebble or memory", c.Store)
	case c.IndexCacheSize < 0:
		return fmt.Errorf("querynode: Config.IndexCacheSize %d must not be negative", c.IndexCacheSize)
	case c.CommitInterval < 0:
		return fmt.Errorf("querynode: Config.CommitInterval %v must not be negative", c.CommitInterval)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("querynode: Config.ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	case c.LayoutPoll < 0:
		return fmt.Errorf("querynode: Config.LayoutPoll %v must not be negative", c.LayoutPoll)
	}
	if _, err := localonly.New("", "", c.ShardHosts...); err != nil {
		return fmt.Errorf("querynode: Config.ShardHosts: %w", err)
	}
	return nil
}

// Node is a query node. Build it with [New], serve with [Node.Run],
// release with [Node.Close].
type Node struct {
	cfg  Config
	log  *slog.Logger
	st   store.Store
	node *qn.Node
	src  *layoutsrc.Source
	pres *etcdlayout.Presence // with an etcd layout, while Run runs
	// kick is pres for the node's task ends, which may come at any time.
	kick atomic.Pointer[etcdlayout.Presence]
	srv  *http.Server
	ln   net.Listener

	started   atomic.Bool // Run was called, or Close before it
	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, opens the node's store and state under cfg.Dir and
// reads the layout (from the file, or from etcd, waiting at most
// [LoadTimeout] for it); ln serves every API once [Node.Run] runs. It
// starts nothing. On error it closes ln and what it opened; the error
// names the field at fault.
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
	if ln == nil {
		return nil, errors.New("querynode: the listener is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src, err := layoutsrc.Open(cfg.Layout)
	if err != nil {
		return nil, fmt.Errorf("querynode: Config.Layout: %w", err)
	}
	n := &Node{cfg: cfg, log: log, ln: ln, src: src}
	lctx, cancel := context.WithTimeout(context.Background(), LoadTimeout)
	l, err := src.Load(lctx)
	cancel()
	if err != nil {
		return n, fmt.Errorf("querynode: layout %s: %w", cfg.Layout, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return n, fmt.Errorf("data directory: %w", err)
	}
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
		AllowedHosts: cfg.ShardHosts, CommitInterval: cfg.CommitInterval, CopyKeyByKey: cfg.CopyKeyByKey, Logger: log,
		OnTaskEnd: func() { // the coordinator waits for it: publish it now
			if p := n.kick.Load(); p != nil {
				p.Kick()
			}
		}}, l); err != nil {
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
	n.srv = httpserve.NewServer(mux, log)
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

// LoadTimeout bounds the reads of an etcd layout that New and
// ReloadLayout make (they take no context).
const LoadTimeout = 10 * time.Second

// ReloadLayout re-reads the layout (the file, or the etcd store); a
// layout that does not load or is older than the one in force is refused
// and the node keeps its own. The program calls it on SIGHUP; it may be
// called at any time, from any goroutine.
func (n *Node) ReloadLayout() error {
	ctx, cancel := context.WithTimeout(context.Background(), LoadTimeout)
	defer cancel()
	l, err := n.src.Load(ctx)
	if err != nil {
		return err
	}
	if err := n.node.SetLayout(l); err != nil {
		return err
	}
	n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
	return nil
}

// followLayout takes l, a layout the watched file or etcd store holds, and logs it
// when it moves the node to a new epoch.
func (n *Node) followLayout(l keyspace.Layout) error {
	before := n.node.Layout().Epoch
	if err := n.node.SetLayout(l); err != nil {
		return err
	}
	if l.Epoch != before {
		n.log.Info("layout loaded", "epoch", l.Epoch, "phase", l.Phase)
	}
	return nil
}

// Run serves until ctx ends, then stops the listener (waiting at most
// Config.ShutdownTimeout for requests in flight) and the node's copy and
// drop tasks, and returns once every goroutine it started has exited: nil
// after a clean stop. Run may be called once, and not after Close.
//
// With an etcd layout Run first writes the node's status (Role query,
// Name Config.Name, qn.Node.Status) under a lease, and keeps it there,
// up to date, until it returns: then it revokes the lease, so the key
// goes at once. It follows the store's watch all along.
func (n *Node) Run(ctx context.Context) error {
	if n.started.Swap(true) {
		return ErrRunTwice
	}
	l := n.node.Layout()
	n.log.Info("starting", "name", n.cfg.Name, "dir", n.cfg.Dir, "store", n.cfg.Store, "layout", n.cfg.Layout, "epoch", l.Epoch, "phase", l.Phase)
	pres, err := n.src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleQuery, Name: n.cfg.Name,
		Status: n.node.Status, TTL: n.cfg.PresenceTTL})
	if err != nil {
		n.ln.Close()
		return fmt.Errorf("querynode: %w", err)
	}
	if pres != nil {
		n.pres = pres
		n.kick.Store(pres)
		defer n.closePresence()
	}
	eg, gctx := errgroup.WithContext(ctx)
	httpserve.Serve(gctx, eg, "query", n.srv, n.ln, n.cfg.ShutdownTimeout)
	eg.Go(func() error { return n.node.Run(gctx) })
	eg.Go(func() error {
		return n.src.Follow(gctx, n.cfg.LayoutPoll, nil, n.followLayout, func(err error) {
			n.log.Error("layout: not loaded; keeping the one in force", "layout", n.cfg.Layout, "err", err)
		})
	})
	return httpserve.WaitStopped(gctx, eg, n.log)
}

// closePresence revokes the node's lease, if it keeps one.
func (n *Node) closePresence() {
	p := n.pres
	n.pres = nil
	n.kick.Store(nil)
	if p == nil {
		return
	}
	if err := p.Close(); err != nil {
		n.log.Warn("presence not revoked; its key expires with its lease", "err", err)
	}
}

// Close closes the node's state and store, the etcd client of an etcd
// layout (revoking the node's lease if Run did not), and the listener if
// Run never ran; call it after Run has returned. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if !n.started.Swap(true) && n.ln != nil { // Run never ran, and will not
			if err := n.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		if n.node != nil {
			errs = append(errs, n.node.Close())
		}
		if n.st != nil {
			errs = append(errs, n.st.Close())
		}
		n.closePresence()
		if n.src != nil {
			errs = append(errs, n.src.Close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
