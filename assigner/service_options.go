package assigner

// The options of NewService.

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/indexkit/indexkit/assigner/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

type serviceOptions struct {
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

	policy      *netpolicy.Policy
	vConc       int
	vTimeout    time.Duration
	vRetryAfter time.Duration
}

// ServiceOption configures [NewService]. A value out of range (nil, a
// duration ≤ 0) leaves the default.
type ServiceOption func(*serviceOptions)

// WithLogger sets the logger (attributes publisher, indexer, cid).
// Default: discard.
func WithLogger(l *slog.Logger) ServiceOption {
	return func(o *serviceOptions) {
		if l != nil {
			o.log = l
		}
	}
}

// WithRequestTimeout bounds every request to an indexer: each admin call
// of a poll, an assign, a handoff, a forwarded announce. Default
// [DefaultRequestTimeout].
func WithRequestTimeout(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithHooks sets the metrics hooks.
func WithHooks(h Hooks) ServiceOption { return func(o *serviceOptions) { o.hooks = h } }

// WithGossip receives announces on the gossip topic on h, and republishes
// HTTP announces there with OrigPeer = publisher. The caller owns h and
// closes it after Run returns. Default: no gossip.
func WithGossip(h host.Host) ServiceOption {
	return func(o *serviceOptions) {
		if h != nil {
			o.host = h
		}
	}
}

// WithHTTPClient sets the HTTP client of the admin calls and the
// forwarded announces. Default: a client of its own without timeout
// (each request is bounded by [WithRequestTimeout]).
func WithHTTPClient(hc *http.Client) ServiceOption {
	return func(o *serviceOptions) {
		if hc != nil {
			o.hc = hc
		}
	}
}

// WithDialPolicy sets where the service may connect to fetch an unknown
// publisher's signed head: the addresses announces name (default nil,
// netpolicy's default policy: public addresses only, checked after name
// resolution). A pool whose publishers are on a private network or on
// this machine needs netpolicy.New(netpolicy.AllowPrivate()). Admin calls
// and forwarded announces go to the configured indexers and are not
// restricted ([WithHTTPClient]).
func WithDialPolicy(p *netpolicy.Policy) ServiceOption {
	return func(o *serviceOptions) { o.policy = p }
}

// WithVerifyConcurrency sets how many unknown publishers' heads are
// fetched at once (default [DefaultVerifyConcurrency]); an announce that
// finds them all busy is dropped, and the publisher's next announce tries
// again.
func WithVerifyConcurrency(n int) ServiceOption {
	return func(o *serviceOptions) {
		if n > 0 {
			o.vConc = n
		}
	}
}

// WithVerifyTimeout bounds each head fetch of an unknown publisher
// (default [DefaultVerifyTimeout]).
func WithVerifyTimeout(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.vTimeout = d
		}
	}
}

// WithVerifyRetryAfter sets how long the announces of a publisher whose
// head did not verify are dropped without fetching it again (default
// [DefaultVerifyRetryAfter]).
func WithVerifyRetryAfter(d time.Duration) ServiceOption {
	return func(o *serviceOptions) {
		if d > 0 {
			o.vRetryAfter = d
		}
	}
}

// WithAdminOptions passes options to every admin.Client (a bearer token,
// a response limit).
func WithAdminOptions(opts ...admin.ClientOption) ServiceOption {
	return func(o *serviceOptions) { o.adminOp = append(o.adminOp, opts...) }
}

// WithReceiverOptions passes options to the announce receiver (IP
// filter, queue and de-duplication sizes). The policy is the config's.
func WithReceiverOptions(opts ...announce.Option) ServiceOption {
	return func(o *serviceOptions) { o.recvOp = append(o.recvOp, opts...) }
}

// WithGossipOptions passes options to the announce gossip of WithGossip
// (a per-peer rate). The network is the config's topic's.
func WithGossipOptions(opts ...announce.GossipOption) ServiceOption {
	return func(o *serviceOptions) { o.gossipOp = append(o.gossipOp, opts...) }
}

// WithResend forwards every HTTP announce of an assigned publisher to
// the unfrozen indexers holding it (the reference's later ResendHttp), so
// that indexers not on gossip hear of new heads. Default true.
func WithResend(on bool) ServiceOption { return func(o *serviceOptions) { o.resend = on } }
