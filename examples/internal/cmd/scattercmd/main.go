package scattercmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/internal/httpserve"
	"github.com/indexkit/indexkit/scatter"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// options are the command-line flags.
type options struct {
	listen, metrics string
	pprof           string
	backends        []string // as given, in order
	configPath      string
	layoutPath      string // a file or an etcd URL (layoutsrc)
	layoutPoll      time.Duration
	presenceTTL     time.Duration
	layout          *layoutsrc.Source // -layout, opened by Main
	assignerURL     string
	timeout         time.Duration
	timeoutSet      bool // -timeout was given explicitly: it wins over the file
	hedge           time.Duration
	cacheEntries    int
	cacheTTL        time.Duration
	cacheNegTTL     time.Duration
	shutdownTimeout time.Duration
	logLevel        slog.Level
	maxConns        int
	maxConnsPerIP   int
}

// urlList is a flag.Value collecting comma-separated URLs; the flag may be
// repeated.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, ",") }

func (l *urlList) Set(s string) error {
	for u := range strings.SplitSeq(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			*l = append(*l, u)
		}
	}
	return nil
}

// parseFlags parses args (without the program name). Usage and flag errors
// go to stderr; -h returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("scatter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scatter -backends URL[,URL...] | -config FILE [flags]")
		fmt.Fprintln(fs.Output(), "Serves the IPNI find API over a scatter/gather of find API backends. Flags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "`address` of the find API (port 0 picks a free port)")
	fs.StringVar(&o.metrics, "metrics", "127.0.0.1:8081", "`address` of the Prometheus /metrics endpoint (\"\" disables it)")
	fs.StringVar(&o.pprof, "pprof", "", "loopback listen `address` of Go's /debug/pprof/ profiles, answering no web page or rebound name (\"\": none, the default)")
	var backends urlList
	fs.Var(&backends, "backends", "comma-separated find API base `URLs` (may be repeated; added to the config file's)")
	fs.StringVar(&o.configPath, "config", "", "config `file`: a JSON array of backend URLs, or {\"Backends\":[...],\"Timeout\":\"5s\",\"Ring\":{\"Vnodes\":256,\"Replication\":2}}; re-read on SIGHUP")
	fs.DurationVar(&o.layoutPoll, "layout-poll", 0, "with a -layout file, how often to read it for a new layout (0: only on SIGHUP)")
	fs.StringVar(&o.layoutPath, "layout", "", "scatter/keyspace layout `file` of a keyspace-sharded query layer: read its read nodes on its read ring (instead of -backends and the config file's Backends and Ring); re-read on SIGHUP. Or etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd layout followed by a watch, with the front end's status under a lease there (named by its -listen address); cut off from etcd for longer than the lease could last, the front end marks every answer partial (502 instead of 404) until it is back at the layout in force")
	fs.DurationVar(&o.presenceTTL, "presence-ttl", 0, "with an etcd -layout, the lease `TTL` of the front end's status key, whole seconds (0: "+etcdlayout.DefaultTTL.String()+"); also how long it may be cut off from etcd before its answers turn partial")
	fs.StringVar(&o.assignerURL, "assigner-state", "", "base `URL` of the assigner's state API (GET /indexers, /assignments), shown in GET /status.json and on the page at / (\"\": none)")
	fs.DurationVar(&o.timeout, "timeout", scatter.DefaultBackendTimeout, "how long each backend may take per request (given explicitly, it overrides the config file's Timeout)")
	fs.DurationVar(&o.hedge, "hedge", 0, "with a ring or -layout, ask a key's owners one after the other: the next after this `delay` without a complete answer, or at once when those asked failed (0: all at once; default with -layout: "+scatternode.DefaultLayoutHedge.String()+")")
	fs.IntVar(&o.cacheEntries, "cache", 0, "result cache size in `entries` (0: no cache)")
	fs.DurationVar(&o.cacheTTL, "cache-ttl", 30*time.Second, "how long a cached answer is kept")
	fs.DurationVar(&o.cacheNegTTL, "cache-negative-ttl", 5*time.Second, "how long a cached \"not found\" is kept (0: not cached)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long requests in flight may take to finish on SIGINT/SIGTERM")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	o.maxConns, o.maxConnsPerIP = cli.DefaultMaxConns, cli.DefaultMaxConnsPerIP
	cli.ConnLimitFlags(fs, &o.maxConns, &o.maxConnsPerIP)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	hedgeSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "timeout":
			o.timeoutSet = true
		case "hedge":
			hedgeSet = true
		}
	})
	if o.layoutPath != "" && !hedgeSet {
		// Asking both owners at once cancels the loser's request, which
		// closes its connection: nearly a new connection per lookup.
		o.hedge = scatternode.DefaultLayoutHedge
	}
	o.backends = backends
	switch {
	case o.listen == "":
		return nil, errors.New("-listen must not be empty")
	case o.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v must be positive", o.timeout)
	case o.hedge < 0:
		return nil, fmt.Errorf("-hedge %v must not be negative", o.hedge)
	case o.cacheEntries < 0:
		return nil, fmt.Errorf("-cache %d must not be negative", o.cacheEntries)
	case o.cacheEntries > 0 && o.cacheTTL <= 0:
		return nil, fmt.Errorf("-cache-ttl %v must be positive", o.cacheTTL)
	case o.cacheNegTTL < 0:
		return nil, fmt.Errorf("-cache-negative-ttl %v must not be negative", o.cacheNegTTL)
	case o.shutdownTimeout <= 0:
		return nil, fmt.Errorf("-shutdown-timeout %v must be positive", o.shutdownTimeout)
	}
	if err := cli.CheckConnLimits(o.maxConns, o.maxConnsPerIP); err != nil {
		return nil, err
	}
	switch {
	case o.layoutPoll < 0:
		return nil, fmt.Errorf("-layout-poll %v must not be negative", o.layoutPoll)
	case o.layoutPoll > 0 && o.layoutPath == "":
		return nil, errors.New("-layout-poll needs -layout")
	case o.layoutPoll > 0 && etcdlayout.IsURL(o.layoutPath):
		return nil, errors.New("-layout-poll is for a layout file: an etcd -layout is followed by a watch")
	case o.presenceTTL < 0 || o.presenceTTL%time.Second != 0:
		return nil, fmt.Errorf("-presence-ttl %v must be whole seconds, not negative", o.presenceTTL)
	}
	if o.layoutPath != "" && len(o.backends) > 0 {
		return nil, errors.New("-layout names the backends: give -backends or -layout, not both")
	}
	if o.configPath == "" && len(o.backends) == 0 && o.layoutPath == "" {
		return nil, errors.New("no backends: give -backends, -config or -layout (see -h)")
	}
	return o, nil
}

// ringConfig is the Ring object of the config file.
type ringConfig = scatternode.Ring

// fileConfig is the object form of the config file.
type fileConfig struct {
	Backends []string
	Timeout  string // a Go duration, such as "5s"
	Ring     *ringConfig
}

// config is what one Gather is built from: the flags and the config file,
// validated as scatternode.Config.Validate does (New and Reload
// normalise the URLs).
type config struct {
	Backends []string // as given, in order: flags first, then the file
	Timeout  time.Duration
	Ring     *ringConfig // nil: ask every backend
	// Layout is the -layout file's (Backends and Ring are then empty).
	Layout *keyspace.Layout
}

// apply sets c's fields onto rc, the front end's Config.
func (c config) apply(rc scatternode.Config) scatternode.Config {
	rc.Backends, rc.Timeout, rc.Ring, rc.Layout = c.Backends, c.Timeout, c.Ring, c.Layout
	return rc
}

// parseConfigFile parses a config file: either a JSON array of URLs (the
// indexstar format) or a fileConfig object (unknown fields are an error).
func parseConfigFile(data []byte) (fileConfig, error) {
	var fc fileConfig
	data = bytes.TrimSpace(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var err error
	switch {
	case len(data) == 0:
		return fc, errors.New("empty file")
	case data[0] == '[':
		err = dec.Decode(&fc.Backends)
	case data[0] == '{':
		dec.DisallowUnknownFields()
		err = dec.Decode(&fc)
	default:
		return fc, errors.New(`want a JSON array of backend URLs or an object {"Backends":[...]}`)
	}
	if err != nil {
		return fc, err
	}
	if dec.More() {
		return fc, errors.New("data after the JSON value")
	}
	return fc, nil
}

// loadConfig reads the config file, if any, and merges it with the flags:
// the backends of both, in that order; the file's Timeout unless -timeout
// was given explicitly; the file's Ring. With -layout, the layout file
// gives the backends and the ring, and the config file may give only the
// Timeout.
func loadConfig(o *options) (config, error) {
	if o.layoutPath != "" {
		return loadLayoutConfig(o)
	}
	cfg := config{Timeout: o.timeout}
	raw := slices.Clone(o.backends)
	if o.configPath != "" {
		data, err := os.ReadFile(o.configPath)
		if err != nil {
			return config{}, fmt.Errorf("config: %w", err)
		}
		fc, err := parseConfigFile(data)
		if err != nil {
			return config{}, fmt.Errorf("config file %s: %w", o.configPath, err)
		}
		raw = append(raw, fc.Backends...)
		if fc.Timeout != "" && !o.timeoutSet {
			d, err := time.ParseDuration(fc.Timeout)
			if err != nil || d <= 0 {
				return config{}, fmt.Errorf("config file %s: Timeout %q must be a positive duration such as \"5s\"", o.configPath, fc.Timeout)
			}
			cfg.Timeout = d
		}
		if fc.Ring != nil {
			r := *fc.Ring
			cfg.Ring = &r
		}
	}
	if len(raw) == 0 {
		return config{}, errors.New("no backends: give -backends or list them in the config file")
	}
	cfg.Backends = raw
	if err := cfg.apply(scatternode.DefaultConfig()).Validate(); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// loadLayoutConfig is loadConfig with -layout.
func loadLayoutConfig(o *options) (config, error) {
	cfg := config{Timeout: o.timeout}
	if o.configPath != "" {
		data, err := os.ReadFile(o.configPath)
		if err != nil {
			return config{}, fmt.Errorf("config: %w", err)
		}
		fc, err := parseConfigFile(data)
		if err != nil {
			return config{}, fmt.Errorf("config file %s: %w", o.configPath, err)
		}
		if len(fc.Backends) > 0 || fc.Ring != nil {
			return config{}, fmt.Errorf("config file %s: Backends and Ring come from -layout %s: leave them out", o.configPath, o.layoutPath)
		}
		if fc.Timeout != "" && !o.timeoutSet {
			d, err := time.ParseDuration(fc.Timeout)
			if err != nil || d <= 0 {
				return config{}, fmt.Errorf("config file %s: Timeout %q must be a positive duration such as \"5s\"", o.configPath, fc.Timeout)
			}
			cfg.Timeout = d
		}
	}
	l, err := o.loadLayout()
	if err != nil {
		return config{}, fmt.Errorf("layout: %w", err)
	}
	// Check it as New and Reload will, so that a bad layout is reported
	// with the file's name.
	c := scatternode.DefaultConfig()
	c.Layout = &l
	if err := c.Validate(); err != nil {
		return config{}, fmt.Errorf("layout %s: %w", o.layoutPath, err)
	}
	cfg.Layout = &l
	return cfg, nil
}

// loadLayoutTimeout bounds a read of an etcd -layout.
const loadLayoutTimeout = 10 * time.Second

// loadLayout reads the -layout: through the source Main opened, else
// (before Main, in tests) the file.
func (o *options) loadLayout() (keyspace.Layout, error) {
	if o.layout == nil {
		return keyspace.Load(o.layoutPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), loadLayoutTimeout)
	defer cancel()
	return o.layout.Load(ctx)
}

// roleConfig is the Config of the flags o and the loaded cfg, logging to
// log and feeding met.
func (o *options) roleConfig(cfg config, log *slog.Logger, met *metrics) scatternode.Config {
	c := cfg.apply(scatternode.DefaultConfig())
	c.CacheEntries, c.CacheTTL, c.CacheNegativeTTL = o.cacheEntries, o.cacheTTL, o.cacheNegTTL
	c.Hedge = o.hedge
	c.ShutdownTimeout = o.shutdownTimeout
	c.AssignerURL = o.assignerURL
	c.Logger = log
	c.Hooks = scatternode.Hooks{
		Gather:  func(backends []string) scatter.GatherHooks { return met.hooks(backends, log) },
		Serving: met.stats.setCurrent,
		Retired: met.stats.retire,
	}
	return c
}

// configAttrs describes cfg in log lines.
func configAttrs(cfg config) []any {
	attrs := []any{"backends", cfg.Backends, "timeout", cfg.Timeout}
	if cfg.Ring != nil {
		attrs = append(attrs, "ring_vnodes", cfg.Ring.Vnodes, "ring_replication", cfg.Ring.Replication)
	}
	if l := cfg.Layout; l != nil {
		attrs = append(attrs, "layout_epoch", l.Epoch, "layout_phase", l.Phase, "ring_replication", l.Replication)
	}
	return attrs
}

// Main is the scatter program: it parses args as examples/scatter's flags
// (see that command's documentation), binds the find API, /metrics and
// -pprof listeners with the connection caps, and runs a
// [scatternode.Scatter] until ctx is done (SIGINT or SIGTERM in the
// binary, the caller's cancel in process), reloading the config or layout
// file on each SIGHUP the process receives. It logs to stderr, including
// one msg=listening name=<x> addr=<host:port> line per listener. It
// returns nil after a clean shutdown and flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, opts.logLevel)

	// Take SIGHUP before anything can send one, so that it never kills us.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	if opts.layoutPath != "" {
		if opts.layout, err = layoutsrc.Open(opts.layoutPath); err != nil {
			return fmt.Errorf("-layout: %w", err)
		}
		defer opts.layout.Close()
	}
	onEtcd := opts.layout != nil && opts.layout.Etcd()
	cfg, err := loadConfig(opts)
	if err != nil {
		return err
	}
	met := newMetrics()
	var lns []net.Listener // every listener bound, closed on an early return
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	ln, err := cli.Listen(opts.listen, opts.maxConns, opts.maxConnsPerIP)
	if err != nil {
		return fmt.Errorf("-listen %s: %w", opts.listen, err)
	}
	lns = append(lns, ln)
	var mln, pln net.Listener
	if opts.metrics != "" {
		if mln, err = cli.Listen(opts.metrics, opts.maxConns, opts.maxConnsPerIP); err != nil {
			closeAll()
			return fmt.Errorf("-metrics %s: %w", opts.metrics, err)
		}
		lns = append(lns, mln)
	}
	if opts.pprof != "" {
		if pln, err = cli.ListenPprof(opts.pprof); err != nil {
			closeAll()
			return err
		}
		lns = append(lns, pln)
	}
	rc := opts.roleConfig(cfg, log, met)
	var front *layoutsrc.Front
	if onEtcd {
		front = layoutsrc.NewFront(opts.layout)
		rc.Fenced = front.Fenced // fenced until the presence is kept
	}
	node, err := scatternode.New(ctx, rc, scatternode.Listeners{Find: ln})
	if err != nil {
		closeAll()
		return err
	}
	defer node.Close()
	if onEtcd {
		err := front.Start(ctx, layoutsrc.FrontConfig{
			Name: node.Addrs().Find, Status: node.Status, TTL: opts.presenceTTL, Logger: log,
			Apply: func(l keyspace.Layout) error { return followLayout(node, l, log, met) },
			Epoch: func() uint64 {
				if cur := node.Config().Layout; cur != nil {
					return cur.Epoch
				}
				return 0
			},
		})
		if err != nil {
			closeAll()
			return fmt.Errorf("-layout %s: %w", opts.layoutPath, err)
		}
		defer func() {
			if err := front.Close(); err != nil {
				log.Warn("presence not revoked; its key expires with its lease", "err", err)
			}
		}()
	}

	cfg.Backends = node.Config().Backends // normalised, or a layout's read nodes
	cli.LogListening(log, "find", node.Addrs().Find)
	if mln != nil {
		cli.LogListening(log, "metrics", mln.Addr().String())
	}
	if pln != nil {
		cli.LogListening(log, "pprof", pln.Addr().String())
	}
	log.Info("starting", append(configAttrs(cfg), "config", opts.configPath, "cache_entries", opts.cacheEntries)...)
	eg, ctx := errgroup.WithContext(ctx)
	if pln != nil {
		// First, so that nothing runs yet if it fails.
		if err := cli.ServePprof(ctx, eg, pln, opts.shutdownTimeout); err != nil {
			closeAll()
			return err
		}
	}
	eg.Go(func() error { return node.Run(ctx) })
	if mln != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(met.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
		}))
		httpserve.Serve(ctx, eg, "metrics", httpserve.NewServer(mux, log), mln, opts.shutdownTimeout)
	}
	eg.Go(func() error {
		reloadLoop(ctx, hup, opts, node, log, met)
		return nil
	})
	onError := func(err error) {
		met.reloads.WithLabelValues("failed").Inc()
		log.Error("reload failed; keeping the current backends", "err", err)
	}
	switch {
	case onEtcd:
		eg.Go(func() error { return front.Run(ctx, onError) })
	case opts.layoutPoll > 0:
		eg.Go(func() error {
			return keyspace.WatchFile(ctx, keyspace.WatchConfig{
				Path:     opts.layoutPath,
				Interval: opts.layoutPoll,
				Apply:    func(l keyspace.Layout) error { return followLayout(node, l, log, met) },
				OnError:  onError,
			})
		})
	}
	return eg.Wait()
}

// followLayout applies l, a layout the -layout file holds, read by
// -layout-poll, or one an etcd -layout's watch or fence hands over: the configuration in force with l's read nodes and ring.
// A layout that changes nothing (the one in force) is not counted or
// logged, so that each poll does not look like a reload.
func followLayout(node *scatternode.Scatter, l keyspace.Layout, log *slog.Logger, met *metrics) error {
	prev := node.Config()
	rc := prev
	rc.Backends, rc.Layout = nil, &l
	applied, err := node.Reload(rc)
	if err != nil || !applied {
		return err
	}
	met.reloads.WithLabelValues("applied").Inc()
	cur := node.Config()
	added, removed := diff(prev.Backends, cur.Backends)
	log.Info("config reloaded", append(configAttrs(config{Backends: cur.Backends, Timeout: cur.Timeout, Layout: cur.Layout}),
		"added", added, "removed", removed)...)
	return nil
}

// reloadLoop applies the config file on each SIGHUP until ctx is done,
// with [scatternode.Scatter.Reload]: requests in flight finish on the old
// Gather, and a config that does not load or build leaves the current one
// in place. Reloads run one at a time, here. Each outcome is counted
// before it is logged, so that a log line is never ahead of the metrics.
func reloadLoop(ctx context.Context, hup <-chan os.Signal, opts *options, node *scatternode.Scatter, log *slog.Logger, met *metrics) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if opts.configPath == "" && opts.layoutPath == "" {
			met.reloads.WithLabelValues("unchanged").Inc()
			log.Warn("SIGHUP: no -config or -layout file to reload; keeping the current backends")
			continue
		}
		prev := node.Config()
		cfg, err := loadConfig(opts)
		applied := false
		if err == nil {
			applied, err = node.Reload(cfg.apply(prev))
		}
		switch {
		case err != nil:
			met.reloads.WithLabelValues("failed").Inc()
			log.Error("reload failed; keeping the current backends", "err", err)
			continue
		case !applied:
			met.reloads.WithLabelValues("unchanged").Inc()
			log.Info("reload: config unchanged; keeping the current backends and their breaker state")
			continue
		}
		met.reloads.WithLabelValues("applied").Inc()
		cur := node.Config()
		added, removed := diff(prev.Backends, cur.Backends)
		cfg.Backends = cur.Backends
		log.Info("config reloaded", append(configAttrs(cfg), "added", added, "removed", removed)...)
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
