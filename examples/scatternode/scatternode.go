package scatternode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/routing"
	"github.com/indexkit/indexkit/scatter/web"
)

// Listeners are the HTTP listeners a front end serves on; the caller
// binds them (a test passes net.Listen("tcp", "127.0.0.1:0")).
type Listeners struct {
	// Find serves the IPNI find API (scatter.Handler's routes), GET
	// /health and GET /stats (the sums of the backends' /stats, see
	// scatter/find/health). Required.
	Find net.Listener
}

// Addrs is where a front end listens.
type Addrs struct {
	// Find is the find API's "host:port".
	Find string
}

// FindURL is the base URL of the find API, http://<Find>.
func (a Addrs) FindURL() string { return "http://" + a.Find }

// Scatter is a front end: the IPNI find API over a scatter/gather of
// other find APIs, whose backends [Scatter.Reload] can replace while it
// serves. Build it with [New], serve with [Scatter.Run], release with
// [Scatter.Close].
type Scatter struct {
	log             *slog.Logger
	hooks           Hooks
	shutdownTimeout time.Duration
	ln              net.Listener
	client          *http.Client // shared by every generation's backends
	front           *swapHandler
	status          *web.Status     // GET /status.json
	conv            *health.Handler // GET /health and /stats

	lookups, partial atomic.Uint64 // Stats, across generations
	fenced           func() bool   // Config.Fenced of New

	mu  sync.Mutex // serialises Reload; guards cur
	cur *generation

	drains    sync.WaitGroup // goroutines waiting for a replaced Gather to drain
	stop      chan struct{}  // closed when Run returns
	started   atomic.Bool    // Run was called, or Close before it
	closeOnce sync.Once
}

// generation is one configuration being served: a Gather and the handler
// over it (the find API at "/", Delegated Routing V1 at routing.Prefix),
// with the sampling API over the same backends at sample.Prefix.
type generation struct {
	cfg     Config
	gather  *scatter.Gather
	handler http.Handler
}

// New validates cfg and builds the front end over cfg.Backends on
// lns.Find. It starts no goroutine; nothing is dialled before the first
// request. The error names the field or listener at fault.
func New(ctx context.Context, cfg Config, lns Listeners) (*Scatter, error) {
	if lns.Find == nil {
		return nil, errors.New("scatternode: Listeners.Find is required")
	}
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("scatternode: config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scatter{log: log, hooks: cfg.Hooks, fenced: cfg.Fenced, shutdownTimeout: cfg.ShutdownTimeout, ln: lns.Find, client: find.NewHTTPClient(), stop: make(chan struct{})}
	gen, err := s.build(cfg)
	if err != nil {
		s.client.CloseIdleConnections()
		return nil, fmt.Errorf("scatternode: %w", err)
	}
	s.cur = gen
	if s.status, err = s.newStatus(cfg.AssignerURL); err != nil {
		s.client.CloseIdleConnections()
		return nil, fmt.Errorf("scatternode: %w", err)
	}
	if s.hooks.Serving != nil {
		s.hooks.Serving(gen.gather)
	}
	s.front = newSwapHandler(gen.handler)
	s.conv = health.NewHandler(health.Config{
		Backends: func() int { return len(s.Config().Backends) },
		Stats: func(ctx context.Context) (health.Stats, error) {
			cfg := s.Config()
			return health.Sum(ctx, s.client, cfg.Backends, cfg.Timeout), nil
		},
		Logger: log,
	})
	return s, nil
}

// build turns cfg (normalised) into a generation; nothing is started.
func (s *Scatter) build(cfg Config) (*generation, error) {
	backends := make([]find.Backend, len(cfg.Backends))
	for i, u := range cfg.Backends {
		b, err := find.NewClient(u, find.WithHTTPClient(s.client))
		if err != nil {
			return nil, err
		}
		backends[i] = b
	}
	opts := []scatter.GatherOption{
		scatter.WithBackendTimeout(cfg.Timeout),
		scatter.WithBackendNames(cfg.Backends...),
	}
	if s.hooks.Gather != nil {
		opts = append(opts, scatter.WithHooks(s.hooks.Gather(cfg.Backends)))
	}
	if cfg.Hedge > 0 {
		opts = append(opts, scatter.WithHedge(cfg.Hedge))
	}
	if cfg.CacheEntries > 0 {
		opts = append(opts, scatter.WithCache(cfg.CacheEntries, cfg.CacheTTL, cfg.CacheNegativeTTL))
	}
	switch {
	case cfg.Layout != nil:
		// The read ring's backend i is ReadNodes()[i], whose URL is
		// cfg.Backends[i]; WithBackendNames names them by URL.
		p, err := keyspace.NewPlacement(*cfg.Layout)
		if err != nil {
			return nil, err
		}
		opts = append(opts, scatter.WithRing(p.ReadRing()))
	case cfg.Ring != nil:
		r, err := scatter.NewRing(cfg.Backends, cfg.Ring.Vnodes, cfg.Ring.Replication)
		if err != nil {
			return nil, err
		}
		opts = append(opts, scatter.WithRing(r))
	}
	g, err := scatter.NewGather(backends, opts...)
	if err != nil {
		return nil, err
	}
	// Both APIs over this generation's Gather, their lookups counted.
	counted := countingBackend{Backend: g, lookups: &s.lookups, partial: &s.partial, fenced: s.fenced}
	h, err := find.NewHandler(counted, find.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	rh, err := routing.New(counted, routing.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	src, err := s.sampleSource(cfg)
	if err != nil {
		return nil, err
	}
	sh, err := sample.NewSourceHandler(src, sample.WithLogger(s.log))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle(routing.Prefix, rh)
	mux.Handle(sample.Prefix, sh)
	return &generation{cfg: cfg, gather: g, handler: mux}, nil
}

// sampleSource is what the front end answers the sampling API from: the
// first of its backends to answer (each indexer holds its contexts
// whole), or, when the backends are keyspace-sharded, a 501 saying that
// none holds a context whole.
func (s *Scatter) sampleSource(cfg Config) (sample.Source, error) {
	if cfg.Layout != nil || cfg.Ring != nil {
		return sample.Unsampled("this front end's backends are keyspace-sharded: each holds part of every context, none a context whole; ask the indexers that ingested it"), nil
	}
	srcs := make([]sample.Source, 0, len(cfg.Backends))
	for _, u := range cfg.Backends {
		c, err := sample.NewClient(u, s.client)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, c)
	}
	return sample.First(cfg.Timeout, srcs...), nil
}

// Addrs reports where the front end listens.
func (s *Scatter) Addrs() Addrs { return Addrs{Find: s.ln.Addr().String()} }

// Config returns the configuration being served: that of New or of the
// last Reload applied, normalised.
func (s *Scatter) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.cfg
}

// Reload builds a Gather from cfg's Backends, Timeout, Ring, Layout, Hedge
// and cache fields and swaps it in: requests that arrive from then on use it,
// requests in flight finish on the old one (then Hooks.Retired is called
// with it). A cfg that builds the same Gather as the current one changes
// nothing and returns applied false, keeping the breaker state and cache;
// an invalid cfg returns an error and keeps the current Gather. The
// other fields of cfg (ShutdownTimeout, AssignerURL, Logger, Hooks, Fenced) stay
// those of New.
// Reloads are serialised; Reload may be called before or while Run runs,
// not after it has returned.
func (s *Scatter) Reload(cfg Config) (applied bool, err error) {
	cfg, err = cfg.normalized()
	if err != nil {
		return false, fmt.Errorf("scatternode: config: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg.sameGather(s.cur.cfg) {
		return false, nil
	}
	gen, err := s.build(cfg)
	if err != nil {
		return false, fmt.Errorf("scatternode: %w", err)
	}
	if s.hooks.Serving != nil {
		s.hooks.Serving(gen.gather)
	}
	drained := s.front.Swap(gen.handler)
	old := s.cur
	s.cur = gen
	s.drains.Go(func() {
		select {
		case <-drained:
			if s.hooks.Retired != nil {
				s.hooks.Retired(old.gather)
			}
			s.log.Debug("previous backends drained", "backends", old.cfg.Backends)
		case <-s.stop:
		}
	})
	return true, nil
}

// Run serves the find API, the page and its status until ctx is done, then shuts down, waiting at
// most Config.ShutdownTimeout for requests in flight, and returns once
// every goroutine it started has exited: nil after a clean stop. Run may
// be called once.
func (s *Scatter) Run(ctx context.Context) error {
	if s.started.Swap(true) {
		return ErrRunTwice
	}
	defer s.drains.Wait()
	defer close(s.stop)
	eg, ctx := errgroup.WithContext(ctx)
	httpserve.Serve(ctx, eg, "find", httpserve.NewServer(s.handler(), s.log), s.ln, s.shutdownTimeout)
	return httpserve.WaitStopped(ctx, eg, s.log)
}

// Close releases what New opened: the listener if Run never ran, and the
// idle connections to the backends. It is idempotent.
func (s *Scatter) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if !s.started.Swap(true) { // Run never ran, and will not
			close(s.stop)
			if e := s.ln.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
				err = e
			}
		}
		s.client.CloseIdleConnections()
	})
	return err
}
