package indexercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/pace"
	"github.com/indexkit/indexkit/internal/httpserve"
)

// Main is the indexer program: it parses args as examples/indexer's flags
// (see that command's documentation), binds the listeners, opens the node
// on its data directory ([indexernode.New]) and runs it
// ([indexernode.Node.Run]) until ctx is
// done (SIGINT or SIGTERM in the binary, the caller's cancel in process),
// then closes it. It logs to stderr, including one msg=listening
// name=<x> addr=<host:port> line per listener, and serves Prometheus
// metrics on -metrics. It returns nil after a clean shutdown and
// flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fc, err := loadConfig(args, stderr)
	if err != nil {
		return err
	}
	var hup chan os.Signal
	if fc.Layout != "" {
		// SIGHUP re-reads the layout file. Take it before anything can
		// send one, so that it never kills the process.
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	tok, err := fc.adminToken(os.Getenv)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, fc.level())
	logSecurity(log, fc, tok)
	if fc.AllowPrivateAddrs {
		log.Warn("dialling private addresses", "flag", "-allow-private-addrs",
			"note", "publishers and frozen indexers on loopback, private, link-local and CGNAT addresses will be dialled; "+
				"others name those addresses, so use it only in a private pool (cloud metadata stays refused)")
	}
	cfg, err := fc.node(tok.Value, log)
	if err != nil {
		return err
	}
	if cfg.QueriesFirst && cfg.Shard == nil && os.Getenv("GOMAXPROCS") == "" {
		// More processors than cores, so that a lookup finds one free
		// while the node ingests (ingest/pace): four per core, from the
		// runtime's default (the cores or the CPU quota), not from what
		// an earlier Main in this process set.
		prev := runtime.GOMAXPROCS(0)
		runtime.SetDefaultGOMAXPROCS()
		runtime.GOMAXPROCS(pace.Procs())
		log.Debug("queries first", "gomaxprocs", runtime.GOMAXPROCS(0), "was", prev)
	}
	met := newMetrics()
	cfg.Hooks = met.hooks()
	cfg.P2PMetrics = met.reg // the host's metrics beside the node's on -metrics

	var lns indexernode.Listeners
	var metricsLn net.Listener
	listen := func(name, addr string, dst *net.Listener) error {
		ln, err := cli.Listen(addr, fc.MaxConns, fc.MaxConnsPerIP)
		if err != nil {
			return fmt.Errorf("-%s %s: %w", name, addr, err)
		}
		*dst = ln
		return nil
	}
	err = errors.Join(
		listen("find", fc.Find, &lns.Find),
		listen("ingest", fc.Ingest, &lns.Ingest),
		listen("admin", fc.Admin, &lns.Admin),
	)
	if err == nil && fc.Metrics != "" {
		err = listen("metrics", fc.Metrics, &metricsLn)
	}
	var pprofLn net.Listener
	if err == nil && fc.Pprof != "" {
		pprofLn, err = cli.ListenPprof(fc.Pprof) // loopback only
	}
	if err != nil {
		for _, ln := range []net.Listener{lns.Find, lns.Ingest, lns.Admin, metricsLn, pprofLn} {
			if ln != nil {
				ln.Close()
			}
		}
		return err
	}
	n, err := indexernode.New(ctx, cfg, lns)
	if err != nil {
		for _, ln := range []net.Listener{metricsLn, pprofLn} {
			if ln != nil {
				ln.Close()
			}
		}
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil {
			log.Error("close", "err", cerr)
		}
	}()
	met.announceStats(n.AnnounceStats)
	met.unverifiedStats(n.UnverifiedStats)
	met.pebbleStats(n.Store())
	if pc := n.Pacer(); pc != nil {
		met.paceStats(pc.Stats, pc.Queried)
	}
	a := n.Addrs()
	cli.LogListening(log, "find", a.Find)
	cli.LogListening(log, "ingest", a.Ingest)
	cli.LogListening(log, "admin", a.Admin)
	if metricsLn != nil {
		cli.LogListening(log, "metrics", metricsLn.Addr().String())
	}
	if pprofLn != nil {
		cli.LogListening(log, "pprof", pprofLn.Addr().String())
	}
	for _, m := range a.P2P {
		cli.LogListening(log, "p2p", m.String())
	}

	eg, ctx := errgroup.WithContext(ctx)
	if metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(met.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
		}))
		httpserve.Serve(ctx, eg, "metrics", httpserve.NewServer(mux, log), metricsLn, cfg.ShutdownTimeout)
	}
	if pprofLn != nil {
		if err := cli.ServePprof(ctx, eg, pprofLn, cfg.ShutdownTimeout); err != nil {
			return err
		}
	}
	if hup != nil {
		eg.Go(func() error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-hup:
					if err := n.ReloadLayout(); err != nil {
						log.Error("SIGHUP: layout not loaded; keeping the one in force", "err", err)
					}
				}
			}
		})
	}
	eg.Go(func() error {
		err := n.Run(ctx)
		if err != nil {
			return err
		}
		return context.Canceled // stop the metrics server when the node stops
	})
	if err := eg.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
