package indexernode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/internal/cli"
	"github.com/indexkit/indexkit/scatter/find"
)

// d returns the duration.
func (d duration) d() time.Duration { return time.Duration(d) }

// servers are the node's HTTP listeners, bound and ready to serve.
type servers struct {
	log     *slog.Logger
	timeout time.Duration
	names   []string
	lns     []net.Listener
	srvs    []*http.Server
}

// listen binds every listener of the node, each with the connection caps
// of the configuration, and logs each bound address as
// msg=listening name=<find|ingest|admin|metrics|p2p> addr=<address>.
func (n *node) listen() (*servers, error) {
	s := &servers{log: n.log, timeout: n.cfg.ShutdownTimeout.d()}
	ingestMux := http.NewServeMux()
	ingestMux.Handle("/", n.recv) // PUT /announce, PUT /ingest/announce
	ingestMux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	findBackend, err := find.NewStoreBackend(n.st)
	if err != nil {
		return nil, err
	}
	findHandler, err := find.NewHandler(findBackend, find.WithLogger(n.log))
	if err != nil {
		return nil, err
	}
	findAPI := n.met.find(findHandler)
	adm := admin.NewHandler(adminNode{n}, admin.WithToken(n.cfg.AdminToken), admin.WithLogger(n.log))
	n.met.announceStats(n.recv)

	add := func(name, addr string, h http.Handler) error {
		ln, err := cli.Listen(addr, n.cfg.MaxConns, n.cfg.MaxConnsPerIP)
		if err != nil {
			return fmt.Errorf("-%s %s: %w", name, addr, err)
		}
		s.names = append(s.names, name)
		s.lns = append(s.lns, ln)
		s.srvs = append(s.srvs, cli.NewHTTPServer(h, n.log))
		return nil
	}
	err = errors.Join(
		add("find", n.cfg.Find, findAPI),
		add("ingest", n.cfg.Ingest, ingestMux),
		add("admin", n.cfg.Admin, adm),
	)
	if err == nil && n.cfg.Metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(n.met.reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelError),
		}))
		err = add("metrics", n.cfg.Metrics, mux)
	}
	if err != nil {
		for _, ln := range s.lns {
			ln.Close()
		}
		return nil, err
	}
	for i, ln := range s.lns {
		cli.LogListening(n.log, s.names[i], ln.Addr().String())
	}
	if n.host != nil {
		for _, a := range n.host.Addrs() {
			cli.LogListening(n.log, "p2p", a.String()+"/p2p/"+peer.ID(n.id).String())
		}
	}
	return s, nil
}

// start serves every listener under eg until ctx ends, then shuts each
// server down, waiting at most the shutdown timeout for requests in flight.
func (s *servers) start(ctx context.Context, eg *errgroup.Group) {
	for i, srv := range s.srvs {
		cli.Serve(ctx, eg, s.names[i], srv, s.lns[i], s.timeout)
	}
}
