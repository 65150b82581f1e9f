package announce

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Sender sends announce messages. [HTTPSender] and [Gossip] are Senders.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// DefaultAnnouncePath is the path an [HTTPSender] uses for a URL without
// one.
const DefaultAnnouncePath = "/announce"

// HTTPSenderOption configures an [HTTPSender].
type HTTPSenderOption func(*senderConfig) error

// senderConfig is what the options of [NewHTTPSender] set.
type senderConfig struct {
	client    *http.Client // nil: a client of the sender's own
	userAgent string
	json      bool
}

// WithHTTPClient sets the client; the default is a new http.Client with no
// timeout of its own (deadlines come from the context given to Send).
func WithHTTPClient(c *http.Client) HTTPSenderOption {
	return func(s *senderConfig) error {
		if c == nil {
			return fmt.Errorf("%w: nil HTTP client", ErrInvalidOption)
		}
		s.client = c
		return nil
	}
}

// WithUserAgent sets the User-Agent header; default "indexkit".
func WithUserAgent(ua string) HTTPSenderOption {
	return func(s *senderConfig) error {
		s.userAgent = ua
		return nil
	}
}

// WithJSON makes the sender send JSON (Content-Type application/json)
// instead of CBOR (application/octet-stream, as go-libipni sends it).
func WithJSON(on bool) HTTPSenderOption {
	return func(s *senderConfig) error {
		s.json = on
		return nil
	}
}

// HTTPSender PUTs announces to one or more indexers (or assigners). It is
// safe for concurrent use.
type HTTPSender struct {
	urls      []string
	publisher peer.ID
	p2p       multiaddr.Multiaddr // /p2p/<publisher>
	client    *http.Client
	ownTr     *http.Transport // the default client's; nil with WithHTTPClient
	userAgent string
	json      bool

	mu     sync.Mutex
	closed bool
}

// NewHTTPSender returns a sender to the given base URLs for the publisher.
// A URL with an empty path (or "/") gets [DefaultAnnouncePath]; other paths
// are kept, so ".../ingest/announce" works for old receivers. Duplicate URLs
// are dropped.
func NewHTTPSender(urls []string, publisher peer.ID, opts ...HTTPSenderOption) (*HTTPSender, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no announce URL", ErrInvalidOption)
	}
	if err := publisher.Validate(); err != nil {
		return nil, fmt.Errorf("%w: publisher: %v", ErrInvalidOption, err)
	}
	cfg := senderConfig{userAgent: "indexkit"}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	s := &HTTPSender{publisher: publisher, client: cfg.client, userAgent: cfg.userAgent, json: cfg.json}
	if s.client == nil {
		// A transport of its own, so that Close releases this sender's
		// connections and nobody else's (http.DefaultTransport is shared).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		s.client, s.ownTr = &http.Client{Transport: tr}, tr
	}
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: announce URL %q: %v", ErrInvalidOption, raw, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: announce URL %q: want http(s)://host[/path]", ErrInvalidOption, raw)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = DefaultAnnouncePath
		}
		if str := u.String(); !seen[str] {
			seen[str] = true
			s.urls = append(s.urls, str)
		}
	}
	p2p, err := multiaddr.NewComponent("p2p", publisher.String())
	if err != nil {
		return nil, fmt.Errorf("%w: publisher: %v", ErrInvalidOption, err)
	}
	s.p2p = p2p.Multiaddr()
	return s, nil
}

// Send PUTs m to every URL at once and returns when all have answered or
// ctx ends. Each address of m gets /p2p/<publisher> appended unless it ends
// with it already; an address with another peer's /p2p/ is an error
// ([ErrManyPublishers]), and so is a message with no address
// ([ErrNoPublisher]), which every receiver refuses. The errors of the
// failed URLs are joined; a receiver's non-2xx answer wraps [ErrRejected].
func (s *HTTPSender) Send(ctx context.Context, m Message) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if len(m.Addrs) == 0 {
		return fmt.Errorf("%w: no addresses to announce", ErrNoPublisher)
	}
	addrs := make([]multiaddr.Multiaddr, 0, len(m.Addrs))
	for _, a := range m.Addrs {
		t, id := peer.SplitAddr(a)
		switch id {
		case s.publisher:
		case "":
			t = a
		default:
			return fmt.Errorf("%w: address %s is not of publisher %s", ErrManyPublishers, a, s.publisher)
		}
		addrs = append(addrs, multiaddr.Join(t, s.p2p))
	}
	m.Addrs = addrs
	var body []byte
	var err error
	ctype := "application/octet-stream"
	if s.json {
		body, err = m.EncodeJSON()
		ctype = "application/json"
	} else {
		body, err = m.EncodeCBOR()
	}
	if err != nil {
		return err
	}
	errs := make([]error, len(s.urls))
	var wg sync.WaitGroup
	for i, u := range s.urls {
		wg.Go(func() { errs[i] = s.put(ctx, u, ctype, body) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *HTTPSender) put(ctx context.Context, u, ctype string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("announce: PUT %s: %w", u, err)
	}
	req.Header.Set("Content-Type", ctype)
	if s.userAgent != "" {
		req.Header.Set("User-Agent", s.userAgent)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("announce: PUT %s: %w", u, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode/100 != 2 {
		// The receiver's body is not quoted: the error may reach an
		// answer or a status served to others.
		return fmt.Errorf("%w: PUT %s: %d %s", ErrRejected, u, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil
}

// Close closes idle connections; later Sends fail with [ErrClosed]. It is
// idempotent.
func (s *HTTPSender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.ownTr != nil && s.client.Transport == s.ownTr {
		s.ownTr.CloseIdleConnections() // a caller's client is the caller's to close
	}
	return nil
}
