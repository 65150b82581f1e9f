package ipnisync

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/libp2p/go-libp2p/core/host"
)

// Defaults of the options.
const (
	// DefaultTimeout bounds each request of a [Client], like the reference
	// indexer's HttpSyncTimeout.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBlockSize is the longest block a [Client] reads: the
	// decoders' limit, schema.MaxBlockSize (4 MiB).
	DefaultMaxBlockSize = schema.MaxBlockSize
)

// An Option configures a [Client] ([New], [NewURL]).
type Option func(*config) error

// config is what the options of a [Client] set.
type config struct {
	logger       *slog.Logger
	timeout      time.Duration
	maxBlockSize int64
	httpClient   *http.Client
	streamHost   host.Host
	skipVerify   bool
	dialPolicy   *netpolicy.Policy
	policySet    bool
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		logger:       slog.New(slog.DiscardHandler),
		timeout:      DefaultTimeout,
		maxBlockSize: DefaultMaxBlockSize,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkClient refuses option combinations a Client cannot honour.
func (c *config) checkClient() error {
	switch {
	case c.policySet && c.httpClient != nil:
		return errors.New("ipnisync: new client: WithDialPolicy and WithHTTPClient: the caller's client dials, so the policy would be ignored (build it with netpolicy's Policy.Transport)")
	case c.policySet && c.streamHost != nil:
		return errors.New("ipnisync: new client: WithDialPolicy and WithLibp2p: the host dials, so the policy would be ignored (give the host a gater, NewGater)")
	}
	return nil
}

// WithLogger sets the logger of a [Client]; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("ipnisync: WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithTimeout bounds each request of a [Client], from sending it to the
// last byte of the body (default [DefaultTimeout]). The caller's context
// bounds the whole call as well.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("ipnisync: WithTimeout: %v is not positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithMaxBlockSize sets the longest block, in bytes after gzip decoding, a
// [Client] reads (default [DefaultMaxBlockSize]).
func WithMaxBlockSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("ipnisync: WithMaxBlockSize: %d is not positive", n)
		}
		c.maxBlockSize = n
		return nil
	}
}

// WithHTTPClient makes a [Client] send plain-HTTP requests with hc (its
// Transport and jar; its Timeout applies on top of [WithTimeout]). hc's
// Transport decides which addresses may be dialled: build it with
// netpolicy (Policy.Transport or Policy.Client) unless every publisher is
// trusted. Redirects are refused whatever hc's CheckRedirect says (the
// client uses a copy of hc with CheckRedirect set to
// netpolicy.RefuseRedirect). The default is a client of its own
// ([WithDialPolicy]), whose idle connections Close closes; Close leaves hc
// alone.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return errors.New("ipnisync: WithHTTPClient: nil client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithLibp2p makes a [Client] reach the publisher over libp2p streams of h
// (HTTP over libp2p, go-libp2p's libp2phttp, protocol [ProtocolID]) instead
// of plain HTTP. The publisher's non-HTTP addresses are added to h's
// peerstore; h must be able to dial one of them, or be connected already.
// The client neither closes h nor its connections.
func WithLibp2p(h host.Host) Option {
	return func(c *config) error {
		if h == nil {
			return errors.New("ipnisync: WithLibp2p: nil host")
		}
		c.streamHost = h
		return nil
	}
}

// WithDialPolicy sets the policy of the addresses a [Client]'s own HTTP
// transport may connect to (default: nil, netpolicy's default policy,
// public addresses only). Every connection is checked after name
// resolution; a refused one fails the request with an error matching
// netpolicy.ErrForbiddenAddress. A client whose publishers are on a
// private network or on this machine needs
// netpolicy.New(netpolicy.AllowPrivate()).
//
// The policy governs only the transport the client builds: with
// [WithHTTPClient] the caller's transport dials, and with [WithLibp2p]
// the host does (give it a gater, [NewGater]), so [New] refuses
// WithDialPolicy together with either rather than ignore it.
func WithDialPolicy(p *netpolicy.Policy) Option {
	return func(c *config) error {
		c.dialPolicy, c.policySet = p, true
		return nil
	}
}

// WithoutHeadVerification makes a [Client] accept a head without checking
// its signature or signer. For tests and trusted networks only: anyone on
// the path can then point the client at any chain.
func WithoutHeadVerification() Option {
	return func(c *config) error {
		c.skipVerify = true
		return nil
	}
}

// A PublisherOption configures a [Publisher] ([NewPublisher]).
type PublisherOption func(*publisherConfig) error

// publisherConfig is what the options of a [Publisher] set.
type publisherConfig struct {
	logger *slog.Logger
	topic  string
	gzip   bool
}

func newPublisherConfig(opts []PublisherOption) (*publisherConfig, error) {
	c := &publisherConfig{
		logger: slog.New(slog.DiscardHandler),
		topic:  DefaultTopic,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithPublisherLogger sets the logger of a [Publisher]; the default
// discards.
func WithPublisherLogger(l *slog.Logger) PublisherOption {
	return func(c *publisherConfig) error {
		if l == nil {
			return errors.New("ipnisync: WithPublisherLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithTopic sets the topic a [Publisher] signs into its head (default
// [DefaultTopic]). An empty topic leaves the field out, as the reference
// publisher does by default.
func WithTopic(topic string) PublisherOption {
	return func(c *publisherConfig) error {
		c.topic = topic
		return nil
	}
}

// WithGzip makes a [Publisher] gzip CID resources of 512 bytes or more for
// clients that send Accept-Encoding: gzip. Off by default: it costs the
// publisher CPU, and indexers often sit on the same network.
func WithGzip(on bool) PublisherOption {
	return func(c *publisherConfig) error {
		c.gzip = on
		return nil
	}
}
