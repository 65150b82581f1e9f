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

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"golang.org/x/sync/errgroup"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/httpserve"
)

// Listeners are what an assigner serves and dials on; the caller makes
// them (a test passes net.Listen("tcp", "127.0.0.1:0")) and hands them
// over: the assigner closes them.
type Listeners struct {
	// Announce serves PUT /announce and PUT /ingest/announce, and GET
	// /health. Required.
	Announce net.Listener
	// State serves the read-only state API (GET /assignments, GET
	// /indexers); nil: not served.
	State net.Listener
	// P2P is the libp2p host of the gossip: the assigner takes announces
	// on Config.Service.Topic over it and republishes HTTP announces
	// there (assigner.WithGossip); [Addrs] reports its addresses. Nil: no
	// gossip.
	P2P host.Host
	// Verify is the libp2p host that fetches the signed heads of unknown
	// publishers that announce only libp2p addresses over libp2p
	// (assigner.WithVerifyHost), so that they can be assigned: the P2P
	// host, or one that listens nowhere. Nil: such publishers are never
	// assigned.
	//
	// Both hosts dial addresses that announces name, so each must dial
	// through ipnisync.NewGater of [Config.DialPolicy], with no relay,
	// NAT port mapping, mDNS or bootstrap.
	Verify host.Host
}

// Addrs is where an assigner listens.
type Addrs struct {
	// Announce and State are the "host:port" of the listeners (State ""
	// when not served).
	Announce, State string
	// P2P are the gossip host's addresses, each ending in /p2p/<PeerID>;
	// none without Listeners.P2P.
	P2P []multiaddr.Multiaddr
	// PeerID is the gossip host's identity; "" without Listeners.P2P.
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
	gossip          host.Host   // Listeners.P2P, nil without
	hosts           []host.Host // the distinct hosts of Listeners, closed by Close
	policy          *netpolicy.Policy
	lns             []net.Listener
	names           []string
	handlers        []http.Handler
	shutdownTimeout time.Duration

	started   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// New validates cfg and builds the assigner on lns. It starts no
// goroutine. On error it has closed nothing: lns are still the caller's
// to close. The error names the field at fault.
func New(ctx context.Context, cfg Config, lns Listeners) (*Assigner, error) {
	if lns.Announce == nil {
		return nil, errors.New("assignernode: Listeners.Announce is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("assignernode: config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	policy, err := cfg.DialPolicy()
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
	a := &Assigner{log: log, gossip: lns.P2P, policy: policy, shutdownTimeout: cfg.ShutdownTimeout}
	if lns.P2P != nil {
		opts = append(opts, assigner.WithGossip(lns.P2P))
		a.hosts = append(a.hosts, lns.P2P)
	}
	if lns.Verify != nil {
		opts = append(opts, assigner.WithVerifyHost(lns.Verify))
		if lns.Verify != lns.P2P {
			a.hosts = append(a.hosts, lns.Verify)
		}
	}
	if a.svc, err = assigner.NewService(cfg.Service.serviceConfig(), opts...); err != nil {
		return nil, fmt.Errorf("assignernode: %w", err)
	}
	announceMux := http.NewServeMux()
	announceMux.Handle("/", a.svc.Handler()) // PUT /announce, PUT /ingest/announce
	announceMux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "assigner ready") })
	a.add("announce", lns.Announce, announceMux)
	if lns.State != nil {
		a.add("state", lns.State, a.svc.StateHandler())
	}
	return a, nil
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
	if a.gossip != nil {
		out.PeerID = a.gossip.ID()
		suffix := multiaddr.StringCast("/p2p/" + a.gossip.ID().String())
		for _, m := range a.gossip.Addrs() {
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
		httpserve.Serve(ctx, eg, a.names[i], httpserve.NewServer(a.handlers[i], a.log), ln, a.shutdownTimeout)
	}
	eg.Go(func() error { return a.svc.Run(ctx) })
	return httpserve.WaitStopped(ctx, eg, a.log)
}

// Close releases what New was given: the libp2p hosts, and the listeners
// if Run never ran. Call it after Run has returned. It is idempotent.
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
		for _, h := range a.hosts {
			errs = append(errs, h.Close())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}
