package assignernode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/internal/cli"
)

// Run is the assigner program: it parses args as examples/assigner's
// flags (see that command's documentation) and serves until ctx is done
// (SIGINT or SIGTERM in the binary, the caller's cancel in process), then
// stops the listeners and the service. It logs to stderr, including one
// msg=listening name=<x> addr=<host:port> line per listener. It returns nil
// after a clean shutdown and flag.ErrHelp for -h.
func Run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := loadConfig(args, stderr)
	if err != nil {
		return err
	}
	tok, err := cli.ResolveAdminToken(cfg.AdminToken, cfg.AdminTokenFile, os.Getenv)
	if err != nil {
		return err
	}
	log := cli.NewLogger(stderr, cfg.level())
	if tok.Warning != "" {
		log.Warn("admin token: " + tok.Warning)
	}
	sc, err := cfg.serviceConfig()
	if err != nil {
		return err
	}
	met := newMetrics()
	policy, err := cli.DialPolicy(cfg.AllowPrivateAddrs, log, "unknown publishers' heads")
	if err != nil {
		return err
	}
	opts := []assigner.ServiceOption{
		assigner.WithLogger(log), assigner.WithHooks(met.hooks()),
		assigner.WithRequestTimeout(cfg.RequestTimeout.d()),
		assigner.WithDialPolicy(policy),
	}
	opts = append(opts, cfg.announceOptions()...)
	if tok.Value != "" {
		opts = append(opts, assigner.WithAdminOptions(admin.WithClientToken(tok.Value)))
		log.Info("calling the indexers' admin APIs with a bearer token", "source", tok.Source)
	}
	var h host.Host
	if cfg.P2P != "" {
		// A fresh identity each start: the assigner's peer ID only signs
		// its republishes. No relay, bootstrap, mDNS or NAT mapping.
		if h, err = libp2p.New(libp2p.ListenAddrStrings(cfg.P2P), libp2p.DisableRelay(),
			libp2p.ConnectionGater(ipnisync.NewGater(policy))); err != nil {
			return fmt.Errorf("-p2p %s: %w", cfg.P2P, err)
		}
		defer h.Close()
		opts = append(opts, assigner.WithGossip(h))
	}
	svc, err := assigner.NewService(sc, opts...)
	if err != nil {
		return err
	}
	met.receiverStats(svc.Receiver())
	met.serviceStats(svc)

	announceMux := http.NewServeMux()
	announceMux.Handle("/", svc.Handler()) // PUT /announce, PUT /ingest/announce
	announceMux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "assigner ready") })
	type listener struct {
		name, flag, addr string
		h                http.Handler
	}
	listeners := []listener{
		{"announce", "-listen", cfg.Listen, announceMux},
		{"state", "-state-listen", cfg.StateListen, svc.StateHandler()},
	}
	if cfg.Metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(met.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
		listeners = append(listeners, listener{"metrics", "-metrics", cfg.Metrics, mux})
	}
	var lns []net.Listener
	for _, l := range listeners {
		ln, err := cli.Listen(l.addr, cfg.MaxConns, cfg.MaxConnsPerIP)
		if err != nil {
			for _, x := range lns {
				x.Close()
			}
			return fmt.Errorf("%s %s: %w", l.flag, l.addr, err)
		}
		lns = append(lns, ln)
	}
	for i, ln := range lns {
		cli.LogListening(log, listeners[i].name, ln.Addr().String())
	}
	if h != nil {
		for _, a := range h.Addrs() {
			cli.LogListening(log, "p2p", a.String()+"/p2p/"+h.ID().String())
		}
	}
	log.Info("starting", "indexers", len(sc.Indexers), "replication", cfg.Replication,
		"preset_replication", cfg.PresetReplication, "poll_interval", cfg.PollInterval.d().String(), "p2p", h != nil,
		"dial_policy", policy.String())

	eg, ctx := errgroup.WithContext(ctx)
	for i, ln := range lns {
		cli.Serve(ctx, eg, listeners[i].name, cli.NewHTTPServer(listeners[i].h, log), ln, cfg.ShutdownTimeout.d())
	}
	eg.Go(func() error { return svc.Run(ctx) })
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	if err := eg.Wait(); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}
