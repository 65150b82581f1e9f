package assignernode

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

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// Listeners are the HTTP listeners an assigner serves on; the caller binds
// them (a test passes net.Listen("tcp", "127.0.0.1:0")).
type Listeners struct {
	// Announce serves PUT /announce and PUT /ingest/announce, and GET
	// /health. Required.
	Announce net.Listener
	// State serves the read-only state API (GET /assignments, GET
	// /indexers); nil: not served.
	State net.Listener
}

// Addrs is where an assigner listens.
type Addrs struct {
	// Announce and State are the "host:port" of the listeners (State ""
	// when not served).
	Announce, State string
	// P2P are the gossip host's addresses, each ending in /p2p/<PeerID>;
	// none without Config.P2P.
	P2P []multiaddr.Multiaddr
	// PeerID is the gossip host's identity; "" without Config.P2P.
	PeerID peer.ID
}

// AnnounceURL is the base URL of the announce listener, http://<Announce>.
func (a Addrs) AnnounceURL() string { return "http://" + a.Announce }

// StateURL is the base URL of the state API, http://<State>.
func (a Addrs) StateURL() string { return "http://" + a.State }

// Assigner is the assigner role: it assigns publishers to the indexers of
// a pool, hands them off as indexers freeze, and forwards announces (see
// assigner.Service). Build it with [New], serve with [Assigner.Run],
// release with [Assigner.Close].
type Assigner struct {
	log             *slog.Logger
	svc             *assigner.Service
	host            host.Host // nil without Config.P2P and Config.P2PVerify
	gossip          bool      // host listens on Config.P2P for gossip
	policy          *netpolicy.Policy
	lns             []net.Listener
	names           []string
	handlers        []http.Handler
	shutdownTimeout time.Duration

	started   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// p2pError is New's error for a libp2p host that cannot start.
type p2pError struct {
	addr string
	err  error
}

func (e *p2pError) Error() string { return "assignernode: P2P " + e.addr + ": " + e.err.Error() }
func (e *p2pError) Unwrap() error { return e.err }

// New validates cfg and builds the assigner on lns: the service and, with
// cfg.P2P or cfg.P2PVerify, its libp2p host. It starts no goroutine. On
// error it has closed what it opened; the error names the field at fault.
func New(ctx context.Context, cfg Config, lns Listeners) (*Assigner, error) {
	if lns.Announce == nil {
		return nil, errors.New("assignernode: Listeners.Announce is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("assignernode: config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	policy, err := cli.DialPolicy(cfg.AllowPrivateAddrs, log, "unknown publishers' heads")
	if err != nil {
		return nil, fmt.Errorf("assignernode: dial policy: %w", err)
	}
	opts := []assigner.ServiceOption{
		assigner.WithLogger(log), assigner.WithHooks(cfg.Hooks),
		assigner.WithRequestTimeout(cfg.RequestTimeout),
		assigner.WithDialPolicy(policy),
	}
	opts = append(opts, cfg.announceOptions()...)
	if cfg.AdminToken != "" {
		opts = append(opts, assigner.WithAdminOptions(admin.WithClientToken(cfg.AdminToken)))
	}
	var h host.Host
	if cfg.P2P != "" || cfg.P2PVerify {
		if h, err = newHost(cfg.P2P, policy); err != nil {
			if cfg.P2P == "" {
				return nil, fmt.Errorf("assignernode: P2PVerify: libp2p host: %w", err)
			}
			return nil, &p2pError{cfg.P2P, err}
		}
	}
	if cfg.P2P != "" {
		opts = append(opts, assigner.WithGossip(h))
	}
	if cfg.P2PVerify {
		opts = append(opts, assigner.WithVerifyHost(h))
	}
	svc, err := assigner.NewService(cfg.Service, opts...)
	if err != nil {
		if h != nil {
			h.Close()
		}
		return nil, fmt.Errorf("assignernode: %w", err)
	}
	a := &Assigner{log: log, svc: svc, host: h, gossip: cfg.P2P != "", policy: policy, shutdownTimeout: cfg.ShutdownTimeout}
	announceMux := http.NewServeMux()
	announceMux.Handle("/", svc.Handler()) // PUT /announce, PUT /ingest/announce
	announceMux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "assigner ready") })
	a.add("announce", lns.Announce, announceMux)
	if lns.State != nil {
		a.add("state", lns.State, svc.StateHandler())
	}
	return a, nil
}

// newHost starts the assigner's libp2p host: listening on listen, or on
// nothing when listen is "" (a host that only dials, for head checks). It
// has a fresh identity each start: the assigner's peer ID only signs its
// republishes and authenticates its head checks. Its dials go through
// the gater of policy. No relay, bootstrap, mDNS or NAT port mapping (the
// last three are off by default), and no metrics in the global registry.
func newHost(listen string, policy *netpolicy.Policy) (host.Host, error) {
	addrs := libp2p.NoListenAddrs
	if listen != "" {
		addrs = libp2p.ListenAddrStrings(listen)
	}
	return libp2p.New(addrs, libp2p.DisableRelay(), libp2p.DisableMetrics(),
		libp2p.ConnectionGater(ipnisync.NewGater(policy)))
}

func (a *Assigner) add(name string, ln net.Listener, h http.Handler) {
	a.names, a.lns, a.handlers = append(a.names, name), append(a.lns, ln), append(a.handlers, h)
}

// Addrs reports where the assigner listens.
func (a *Assigner) Addrs() Addrs {
	out := Addrs{Announce: a.lns[0].Addr().String()}
	if len(a.lns) > 1 {
		out.State = a.lns[1].Addr().String()
	}
	if a.gossip {
		out.PeerID = a.host.ID()
		suffix := multiaddr.StringCast("/p2p/" + a.host.ID().String())
		for _, m := range a.host.Addrs() {
			out.P2P = append(out.P2P, m.Encapsulate(suffix))
		}
	}
	return out
}

// Service is the assigner's service, for its state and statistics.
func (a *Assigner) Service() *assigner.Service { return a.svc }

// DialPolicy is the policy the assigner fetches unknown publishers' heads
// under.
func (a *Assigner) DialPolicy() *netpolicy.Policy { return a.policy }

// Run serves the listeners and runs the service (polls, assignments,
// handoffs, announce forwarding) until ctx is done, then shuts the
// listeners down, waiting at most Config.ShutdownTimeout for requests in
// flight, and returns once every goroutine it started has exited: nil
// after a clean stop. Run may be called once.
func (a *Assigner) Run(ctx context.Context) error {
	if a.started.Swap(true) {
		return ErrRunTwice
	}
	eg, ctx := errgroup.WithContext(ctx)
	for i, ln := range a.lns {
		cli.Serve(ctx, eg, a.names[i], cli.NewHTTPServer(a.handlers[i], a.log), ln, a.shutdownTimeout)
	}
	eg.Go(func() error { return a.svc.Run(ctx) })
	return cli.WaitStopped(ctx, eg, a.log)
}

// Close releases what New opened: the libp2p host, and the listeners if
// Run never ran. Call it after Run has returned. It is idempotent.
func (a *Assigner) Close() error {
	a.closeOnce.Do(func() {
		var errs []error
		if !a.started.Swap(true) {
			for _, ln := range a.lns {
				if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
					errs = append(errs, err)
				}
			}
		}
		if a.host != nil {
			errs = append(errs, a.host.Close())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}
