package scatternode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/internal/cli"
	"github.com/indexkit/indexkit/scatter"
)

// generation is one configuration being served: a Gather and the find API
// handler over it.
type generation struct {
	cfg     config
	gather  *scatter.Gather
	handler http.Handler
}

// server holds what a configuration is turned into a generation with.
type server struct {
	opts    *options
	log     *slog.Logger
	client  *http.Client // shared by every generation's backends
	metrics *metrics
}

// build turns cfg into a generation; nothing is started.
func (s *server) build(cfg config) (*generation, error) {
	backends := make([]scatter.Backend, len(cfg.Backends))
	for i, u := range cfg.Backends {
		b, err := scatter.NewHTTPBackend(u, scatter.WithHTTPClient(s.client))
		if err != nil {
			return nil, err
		}
		backends[i] = b
	}
	opts := []scatter.GatherOption{
		scatter.WithBackendTimeout(cfg.Timeout),
		scatter.WithBackendNames(cfg.Backends...),
		scatter.WithGatherHooks(s.metrics.hooks(cfg.Backends, s.log)),
	}
	if s.opts.cacheEntries > 0 {
		opts = append(opts, scatter.WithCache(s.opts.cacheEntries, s.opts.cacheTTL, s.opts.cacheNegTTL))
	}
	if cfg.Ring != nil {
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
	h := scatter.NewHandler(g, scatter.WithHandlerLogger(s.log))
	return &generation{cfg: cfg, gather: g, handler: h}, nil
}

// configAttrs describes cfg in log lines.
func configAttrs(cfg config) []any {
	attrs := []any{"backends", cfg.Backends, "timeout", cfg.Timeout}
	if cfg.Ring != nil {
		attrs = append(attrs, "ring_vnodes", cfg.Ring.Vnodes, "ring_replication", cfg.Ring.Replication)
	}
	return attrs
}

// Run is the scatter program: it parses args as examples/scatter's flags
// (see that command's documentation) and serves the find API until ctx is
// done (SIGINT or SIGTERM in the binary, the caller's cancel in process),
// reloading the config file on each SIGHUP the process receives. It logs
// to stderr, including one msg=listening name=<x> addr=<host:port> line
// per listener. It returns nil after a clean shutdown and flag.ErrHelp for
// -h.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, opts.logLevel)

	// Take SIGHUP before anything can send one, so that it never kills us.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	cfg, err := loadConfig(opts)
	if err != nil {
		return err
	}
	s := &server{opts: opts, log: log, client: scatter.NewHTTPClient(), metrics: newMetrics()}
	defer s.client.CloseIdleConnections()
	gen, err := s.build(cfg)
	if err != nil {
		return err
	}
	s.metrics.stats.setCurrent(gen.gather)
	front := newSwapHandler(gen.handler)

	ln, err := cli.Listen(opts.listen, opts.maxConns, opts.maxConnsPerIP)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", opts.listen, err)
	}
	servers := []*http.Server{cli.NewHTTPServer(front, log)}
	listeners := []net.Listener{ln}
	names := []string{"find"}
	if opts.metrics != "" {
		mln, err := cli.Listen(opts.metrics, opts.maxConns, opts.maxConnsPerIP)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-metrics %s: %w", opts.metrics, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
		}))
		servers = append(servers, cli.NewHTTPServer(mux, log))
		listeners = append(listeners, mln)
		names = append(names, "metrics")
	}

	for i := range servers {
		cli.LogListening(log, names[i], listeners[i].Addr().String())
	}
	log.Info("starting", append(configAttrs(cfg), "config", opts.configPath, "cache_entries", opts.cacheEntries)...)
	eg, ctx := errgroup.WithContext(ctx)
	for i, srv := range servers {
		cli.Serve(ctx, eg, names[i], srv, listeners[i], opts.shutdownTimeout)
	}
	eg.Go(func() error {
		s.reloadLoop(ctx, hup, front, gen, eg)
		return nil
	})
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	err = eg.Wait()
	if err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// reloadLoop applies the config file on each SIGHUP until ctx is done. A
// reload builds a whole new Gather and swaps it in behind front: requests
// in flight finish on the old one, and a config that does not load or build
// leaves the current one in place. Reloads run one at a time, here. Each
// outcome is counted before it is logged, so that a log line is never ahead
// of the metrics.
func (s *server) reloadLoop(ctx context.Context, hup <-chan os.Signal, front *swapHandler, cur *generation, eg *errgroup.Group) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if s.opts.configPath == "" {
			s.metrics.reloads.WithLabelValues("unchanged").Inc()
			s.log.Warn("SIGHUP: no -config file to reload; keeping the current backends")
			continue
		}
		cfg, err := loadConfig(s.opts)
		var gen *generation
		if err == nil && !cfg.equal(cur.cfg) {
			gen, err = s.build(cfg)
		}
		switch {
		case err != nil:
			s.metrics.reloads.WithLabelValues("failed").Inc()
			s.log.Error("reload failed; keeping the current backends", "err", err)
			continue
		case gen == nil:
			s.metrics.reloads.WithLabelValues("unchanged").Inc()
			s.log.Info("reload: config unchanged; keeping the current backends and their breaker state")
			continue
		}
		s.metrics.stats.setCurrent(gen.gather)
		drained := front.Swap(gen.handler)
		old := cur
		cur = gen
		s.metrics.reloads.WithLabelValues("applied").Inc()
		added, removed := diff(old.cfg.Backends, cfg.Backends)
		s.log.Info("config reloaded", append(configAttrs(cfg), "added", added, "removed", removed)...)
		eg.Go(func() error {
			select {
			case <-drained:
				s.metrics.stats.retire(old.gather)
				s.log.Debug("previous backends drained", "backends", old.cfg.Backends)
			case <-ctx.Done():
			}
			return nil
		})
	}
}

// diff returns the elements of b not in a, and those of a not in b.
func diff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}
