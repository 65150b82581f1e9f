package admin

import (
	"fmt"
	"log/slog"
	"net/http"
)

// DefaultListenAddr is where an indexer binary should serve the admin API
// unless configured otherwise: loopback only, on the reference's port.
// The handler does not listen; the binary does.
const DefaultListenAddr = "127.0.0.1:3002"

// Defaults, in one place.
const (
	// DefaultMaxRequestBody bounds request bodies the handler reads (the
	// handoff and sync bodies are well under 1 KiB).
	DefaultMaxRequestBody = 8 << 10
	// DefaultMaxResponseBody bounds response bodies the Client reads (a
	// list of 16 MiB holds about 150,000 assignments).
	DefaultMaxResponseBody = 16 << 20
	// DefaultIngestStatusLimit is the page size of GET /ingest/status
	// without ?limit=, and MaxIngestStatusLimit the largest ?limit= the
	// handler takes: a page of 1000 publishers is about 500 KB of JSON.
	DefaultIngestStatusLimit = 100
	MaxIngestStatusLimit     = 1000
)

type handlerConfig struct {
	token   string
	hosts   []string
	maxBody int64
	log     *slog.Logger
}

func defaultHandlerConfig() handlerConfig {
	return handlerConfig{
		maxBody: DefaultMaxRequestBody,
		log:     slog.New(slog.DiscardHandler),
	}
}

// Option configures [NewHandler]. An option given a value out of range (a
// limit ≤ 0, a nil logger) makes NewHandler fail with [ErrInvalidOption].
type Option func(*handlerConfig) error

// WithToken makes the handler require "Authorization: Bearer <token>" on
// every request (401 otherwise), compared in constant time. Default: no
// token; the API then relies on listening on loopback
// ([DefaultListenAddr]) and answers only requests to a loopback Host that
// no web page sent (see Security in the package documentation). An
// empty token is no token.
func WithToken(token string) Option {
	return func(c *handlerConfig) error {
		c.token = token
		return nil
	}
}

// WithAllowedHosts names the Hosts, besides 127.0.0.0/8, [::1] and
// localhost, that a handler without a token answers: host names or IP
// addresses without a port ("indexer-0.internal", "10.0.0.5"), for a
// node reached through a proxy or a name of its own. Without a token any
// other Host is refused 421 ([ErrNotLocal]); with one the Host is not
// checked. A name with a port, a scheme or a path fails NewHandler with
// [ErrInvalidOption]. Default: none.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *handlerConfig) error {
		c.hosts = append(c.hosts, hosts...)
		return nil
	}
}

// WithMaxRequestBody bounds the request bodies the handler reads; a larger
// body is answered 413. Default [DefaultMaxRequestBody].
func WithMaxRequestBody(n int64) Option {
	return func(c *handlerConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithMaxRequestBody(%d): want > 0", ErrInvalidOption, n)
		}
		c.maxBody = n
		return nil
	}
}

// WithLogger sets the logger of refused and failed requests (attribute
// "publisher" where there is one). Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(c *handlerConfig) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		c.log = l
		return nil
	}
}

type clientConfig struct {
	token   string
	http    *http.Client
	maxBody int64
}

func defaultClientConfig() clientConfig {
	return clientConfig{
		http:    http.DefaultClient,
		maxBody: DefaultMaxResponseBody,
	}
}

// ClientOption configures [NewClient]. An option given a value out of
// range (a nil client, a limit ≤ 0) makes NewClient fail with
// [ErrInvalidOption].
type ClientOption func(*clientConfig) error

// WithClientToken sends "Authorization: Bearer <token>" with every request,
// for a handler made with [WithToken]. An empty token is no token.
func WithClientToken(token string) ClientOption {
	return func(c *clientConfig) error {
		c.token = token
		return nil
	}
}

// WithHTTPClient sets the HTTP client. Default http.DefaultClient, which
// has no timeout: bound each call with its context.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *clientConfig) error {
		if hc == nil {
			return fmt.Errorf("%w: WithHTTPClient(nil)", ErrInvalidOption)
		}
		c.http = hc
		return nil
	}
}

// WithMaxResponseBody bounds the response bodies the client reads; a
// larger body fails the call. Default [DefaultMaxResponseBody].
func WithMaxResponseBody(n int64) ClientOption {
	return func(c *clientConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithMaxResponseBody(%d): want > 0", ErrInvalidOption, n)
		}
		c.maxBody = n
		return nil
	}
}
