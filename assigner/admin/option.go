package admin

import (
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
	maxBody int64
	log     *slog.Logger
}

func defaultHandlerConfig() handlerConfig {
	return handlerConfig{
		maxBody: DefaultMaxRequestBody,
		log:     slog.New(slog.DiscardHandler),
	}
}

// Option configures [NewHandler]. A value out of range (an empty token, a
// limit ≤ 0, a nil logger) leaves the default.
type Option func(*handlerConfig)

// WithToken makes the handler require "Authorization: Bearer <token>" on
// every request (401 otherwise), compared in constant time. Default: no
// token; the API then relies on listening on loopback
// ([DefaultListenAddr]).
func WithToken(token string) Option {
	return func(c *handlerConfig) {
		if token != "" {
			c.token = token
		}
	}
}

// WithMaxRequestBody bounds the request bodies the handler reads; a larger
// body is answered 413. Default [DefaultMaxRequestBody].
func WithMaxRequestBody(n int64) Option {
	return func(c *handlerConfig) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithLogger sets the logger of refused and failed requests (attribute
// "publisher" where there is one). Default: discard.
func WithLogger(l *slog.Logger) Option {
	return func(c *handlerConfig) {
		if l != nil {
			c.log = l
		}
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

// ClientOption configures [NewClient]. A value out of range (an empty
// token, a nil client, a limit ≤ 0) leaves the default.
type ClientOption func(*clientConfig)

// WithClientToken sends "Authorization: Bearer <token>" with every request,
// for a handler made with [WithToken].
func WithClientToken(token string) ClientOption {
	return func(c *clientConfig) {
		if token != "" {
			c.token = token
		}
	}
}

// WithHTTPClient sets the HTTP client. Default http.DefaultClient, which
// has no timeout: bound each call with its context.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *clientConfig) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithMaxResponseBody bounds the response bodies the client reads; a
// larger body fails the call. Default [DefaultMaxResponseBody].
func WithMaxResponseBody(n int64) ClientOption {
	return func(c *clientConfig) {
		if n > 0 {
			c.maxBody = n
		}
	}
}
