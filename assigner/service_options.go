package assigner

// The options of NewService.

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

type serviceConfig struct {
	log     *slog.Logger
	timeout time.Duration
	hooks   Hooks
	host    host.Host
	hc      *http.Client
	adminOp []admin.ClientOption
	resend  bool
	recvOp  []announce.Option
	// gossipOp are WithGossipOptions'.
	gossipOp []announce.GossipOption

	announcePoll time.Duration

	policy      *netpolicy.Policy
	vHost       host.Host
	vConc       int
	vQueue      int
	vTimeout    time.Duration
	vRetryAfter time.Duration
}

// ServiceOption configures [NewService]. An option given a value out of
// range (a nil logger, host or client, a number or duration ≤ 0) makes
// NewService fail with [ErrInvalidOption].
type ServiceOption func(*serviceConfig) error

// WithLogger sets the logger (attributes publisher, indexer, cid).
// Default: discard.
func WithLogger(l *slog.Logger) ServiceOption {
	return func(o *serviceConfig) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		o.log = l
		return nil
	}
}

// WithRequestTimeout bounds every request to an indexer: each admin call
// of a poll, an assign, a handoff, a forwarded announce. Default
// [DefaultRequestTimeout].
func WithRequestTimeout(d time.Duration) ServiceOption {
	return func(o *serviceConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithRequestTimeout(%v): want > 0", ErrInvalidOption, d)
		}
		o.timeout = d
		return nil
	}
}

// WithAnnouncePollInterval sets the least time between two starts of a
// poll of one indexer when announces ask for it (default
// [DefaultAnnouncePollInterval]). An announce of a publisher that must
// wait while some indexers may hold it unknown to the state
// ([State.MayHold]: never polled, or a request for it failed since their
// last poll) polls those indexers at once, rather than at the next
// PollInterval; an indexer whose latest poll started less than d ago is
// polled when d has passed, once for all the announces meanwhile. So a
// flood of announces polls each indexer at most once per d.
func WithAnnouncePollInterval(d time.Duration) ServiceOption {
	return func(o *serviceConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithAnnouncePollInterval(%v): want > 0", ErrInvalidOption, d)
		}
		o.announcePoll = d
		return nil
	}
}

// WithHooks sets the metrics hooks.
func WithHooks(h Hooks) ServiceOption {
	return func(o *serviceConfig) error { o.hooks = h; return nil }
}

// WithGossip receives announces on the gossip topic on h, and republishes
// HTTP announces there with OrigPeer = publisher. The caller owns h and
// closes it after Run returns. Default: no gossip.
func WithGossip(h host.Host) ServiceOption {
	return func(o *serviceConfig) error {
		if h == nil {
			return fmt.Errorf("%w: WithGossip(nil)", ErrInvalidOption)
		}
		o.host = h
		return nil
	}
}

// WithHTTPClient sets the HTTP client of the admin calls and the
// forwarded announces. Default: a client of its own without timeout
// (each request is bounded by [WithRequestTimeout]).
func WithHTTPClient(hc *http.Client) ServiceOption {
	return func(o *serviceConfig) error {
		if hc == nil {
			return fmt.Errorf("%w: WithHTTPClient(nil)", ErrInvalidOption)
		}
		o.hc = hc
		return nil
	}
}

// WithDialPolicy sets where the service may connect to fetch an unknown
// publisher's signed head: the addresses announces name (default nil,
// netpolicy's default policy: public addresses only, checked after name
// resolution). A pool whose publishers are on a private network or on
// this machine needs netpolicy.New(netpolicy.AllowPrivate()). It governs
// the HTTP fetches; over libp2p the host of [WithVerifyHost] dials, under
// its own gater (give it ipnisync.NewGater of the same policy). Admin
// calls and forwarded announces go to the configured indexers and are not
// restricted ([WithHTTPClient]).
func WithDialPolicy(p *netpolicy.Policy) ServiceOption {
	return func(o *serviceConfig) error { o.policy = p; return nil }
}

// WithVerifyHost fetches the signed heads of unknown publishers that
// announce only libp2p addresses (no /http or /https multiaddr, such as
// /ip4/203.0.113.7/tcp/4001/p2p/<id>) over libp2p streams of h: the
// ipnisync protocol over libp2phttp, as an indexer syncs them, with the
// publisher's peer ID authenticated by the connection. An announce that
// names an HTTP address is verified over HTTP, as without this option.
// h dials the publisher, so it must carry the dial policy itself: build
// it with the gater ipnisync.NewGater makes of the [WithDialPolicy]
// policy, and with no relay, NAT port mapping, mDNS or bootstrap; it
// needs no listen address. A connection h opens for a check is closed
// after it. The caller owns h (it may be the [WithGossip] host) and
// closes it after Run returns. Default: none, so an announce with only
// libp2p addresses does not verify and its publisher is never assigned.
func WithVerifyHost(h host.Host) ServiceOption {
	return func(o *serviceConfig) error {
		if h == nil {
			return fmt.Errorf("%w: WithVerifyHost(nil)", ErrInvalidOption)
		}
		o.vHost = h
		return nil
	}
}

// WithVerifyConcurrency sets how many unknown publishers' heads are
// fetched at once (default [DefaultVerifyConcurrency]); the others wait
// in the queue of [WithVerifyQueue].
func WithVerifyConcurrency(n int) ServiceOption {
	return func(o *serviceConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithVerifyConcurrency(%d): want > 0", ErrInvalidOption, n)
		}
		o.vConc = n
		return nil
	}
}

// WithVerifyQueue sets how many unknown publishers wait, first come first
// served, for a head fetch while [WithVerifyConcurrency] run (default
// [DefaultVerifyQueue]). When it is full, the announce of another unknown
// publisher is refused while its request is open: 503 with a Retry-After
// of [WithVerifyTimeout].
func WithVerifyQueue(n int) ServiceOption {
	return func(o *serviceConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithVerifyQueue(%d): want > 0", ErrInvalidOption, n)
		}
		o.vQueue = n
		return nil
	}
}

// WithVerifyTimeout bounds each head fetch of an unknown publisher
// (default [DefaultVerifyTimeout]).
func WithVerifyTimeout(d time.Duration) ServiceOption {
	return func(o *serviceConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithVerifyTimeout(%v): want > 0", ErrInvalidOption, d)
		}
		o.vTimeout = d
		return nil
	}
}

// WithVerifyRetryAfter sets how long the announces of a publisher whose
// head did not verify are dropped without fetching it again (default
// [DefaultVerifyRetryAfter]).
func WithVerifyRetryAfter(d time.Duration) ServiceOption {
	return func(o *serviceConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithVerifyRetryAfter(%v): want > 0", ErrInvalidOption, d)
		}
		o.vRetryAfter = d
		return nil
	}
}

// WithAdminOptions passes options to every admin.Client (a bearer token,
// a response limit).
func WithAdminOptions(opts ...admin.ClientOption) ServiceOption {
	return func(o *serviceConfig) error { o.adminOp = append(o.adminOp, opts...); return nil }
}

// WithReceiverOptions passes options to the announce receiver (IP
// filter, de-duplication size, the limits announce.WithSourceRate and
// announce.WithPublisherRate). The policy is the config's, and the
// receiver hands announces to the service (announce.WithSink), which says
// which limit each falls under.
func WithReceiverOptions(opts ...announce.Option) ServiceOption {
	return func(o *serviceConfig) error { o.recvOp = append(o.recvOp, opts...); return nil }
}

// WithGossipOptions passes options to the announce gossip of WithGossip
// (a per-peer rate). The network is the config's topic's.
func WithGossipOptions(opts ...announce.GossipOption) ServiceOption {
	return func(o *serviceConfig) error { o.gossipOp = append(o.gossipOp, opts...); return nil }
}

// WithResend forwards every HTTP announce of an assigned publisher to
// the unfrozen indexers holding it (the reference's later ResendHttp), so
// that indexers not on gossip hear of new heads. Default true.
func WithResend(on bool) ServiceOption {
	return func(o *serviceConfig) error { o.resend = on; return nil }
}
