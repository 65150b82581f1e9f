package ipnisync

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// Client fetches a publisher's signed head and blocks. It is safe for
// concurrent use. A Client starts no goroutines; Close releases its idle
// connections.
type Client struct {
	publisher  peer.ID
	hc         *http.Client
	ownTr      *http.Transport // closed by Close; nil with WithHTTPClient or libp2p
	bases      []*url.URL      // plain HTTP: base URLs ending in IPNIPath
	cur        atomic.Int32    // index in bases of the address that last answered
	p2p        *p2pPath        // libp2p: the protocol path, learnt on first use
	timeout    time.Duration
	maxBlock   int64
	skipVerify bool
	logger     *slog.Logger
	closeOnce  sync.Once
}

// New returns a client of the publisher pub. Over plain HTTP it uses pub's
// HTTP multiaddrs (those with an /http or /https component, with an
// optional /http-path prefix), in order, moving to the next on a transport
// error; with [WithLibp2p] it uses libp2p streams to pub.ID. pub.ID is the
// peer heads must be signed by; it may be empty only with
// [WithoutHeadVerification] over HTTP. Options: [WithTimeout],
// [WithMaxBlockSize], [WithDialPolicy], [WithHTTPClient], [WithLibp2p],
// [WithoutHeadVerification], [WithLogger]. New does no I/O.
//
// The client's own transport connects only to addresses its dial policy
// allows: public ones by default ([WithDialPolicy]). It follows no
// redirect, with its own transport or the caller's.
func New(pub peer.AddrInfo, opts ...Option) (*Client, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkClient(); err != nil {
		return nil, err
	}
	if pub.ID == "" && (!cfg.skipVerify || cfg.streamHost != nil) {
		return nil, errors.New("ipnisync: new client: no publisher peer ID (needed to verify heads and to dial over libp2p)")
	}
	c := newClient(pub.ID, cfg)
	if cfg.streamHost != nil {
		if err := c.useLibp2p(cfg.streamHost, pub); err != nil {
			return nil, err
		}
		return c, nil
	}
	for _, a := range pub.Addrs {
		u, ok, err := httpURL(a)
		if err != nil {
			return nil, fmt.Errorf("ipnisync: new client: %w", err)
		}
		if ok {
			c.bases = append(c.bases, u.JoinPath(IPNIPath))
		}
	}
	if len(c.bases) == 0 {
		return nil, fmt.Errorf("ipnisync: new client: publisher %s has no HTTP address among %v (use WithLibp2p for libp2p addresses)", pub.ID, pub.Addrs)
	}
	c.useHTTP(cfg)
	return c, nil
}

// NewURL returns a client of the publisher whose base URL is rawURL
// (http or https, with any path prefix; the client appends [IPNIPath]),
// whose heads must be signed by pub. It takes the same options as [New];
// [WithLibp2p] makes no sense here and is refused.
func NewURL(rawURL string, pub peer.ID, opts ...Option) (*Client, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.streamHost != nil {
		return nil, errors.New("ipnisync: new client: WithLibp2p needs New with the publisher's peer.AddrInfo")
	}
	if err := cfg.checkClient(); err != nil {
		return nil, err
	}
	if pub == "" && !cfg.skipVerify {
		return nil, errors.New("ipnisync: new client: no publisher peer ID (needed to verify heads)")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ipnisync: new client: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("ipnisync: new client: %q is not an http(s) URL", rawURL)
	}
	u.RawQuery, u.Fragment = "", ""
	c := newClient(pub, cfg)
	c.bases = []*url.URL{u.JoinPath(IPNIPath)}
	c.useHTTP(cfg)
	return c, nil
}

func newClient(pub peer.ID, cfg *config) *Client {
	logger := cfg.logger
	if pub != "" {
		logger = logger.With("publisher", pub.String())
	}
	return &Client{
		publisher:  pub,
		timeout:    cfg.timeout,
		maxBlock:   cfg.maxBlockSize,
		skipVerify: cfg.skipVerify,
		logger:     logger,
	}
}

func (c *Client) useHTTP(cfg *config) {
	if cfg.httpClient != nil {
		hc := *cfg.httpClient
		hc.CheckRedirect = netpolicy.RefuseRedirect
		c.hc = &hc
		return
	}
	// The policy's transport asks for no gzip: the client asks for it
	// itself and decodes it under its size limit.
	c.ownTr = cfg.dialPolicy.Transport()
	c.hc = &http.Client{Transport: c.ownTr, CheckRedirect: netpolicy.RefuseRedirect}
}

// Publisher returns the peer ID heads must be signed by ("" if none was
// given).
func (c *Client) Publisher() peer.ID { return c.publisher }

// Head fetches the publisher's head: the CID of its newest advertisement.
// It fails with [ErrNoHead] when the publisher has none (204), and unless
// [WithoutHeadVerification] with [ErrBadSignature] when the head's
// signature does not verify or its signer is not the publisher.
func (c *Client) Head(ctx context.Context) (cid.Cid, error) {
	body, u, err := c.get(ctx, "head", maxHeadSize, true)
	if err != nil {
		return cid.Undef, err
	}
	if body == nil {
		return cid.Undef, fmt.Errorf("%w: GET %s: 204 No Content", ErrNoHead, u)
	}
	h, err := DecodeSignedHead(body)
	if err != nil {
		return cid.Undef, fmt.Errorf("GET %s: %w", u, err)
	}
	if !c.skipVerify {
		if err := h.Verify(c.publisher); err != nil {
			return cid.Undef, fmt.Errorf("GET %s: %w", u, err)
		}
	}
	return h.Head, nil
}

// Block fetches the block of cid k and checks that its bytes hash to k's
// multihash; it fails with [ErrHashMismatch] if they do not, with
// [ErrBlockTooLarge] if the block is longer than the limit
// ([WithMaxBlockSize]), and with a [StatusError] matching [ErrNotFound]
// if the publisher does not have it.
func (c *Client) Block(ctx context.Context, k cid.Cid) ([]byte, error) {
	if !k.Defined() {
		return nil, errors.New("ipnisync: block: undefined CID")
	}
	body, u, err := c.get(ctx, k.String(), c.maxBlock, false)
	if err != nil {
		return nil, err
	}
	if err := checkHash(k, body); err != nil {
		putBuf(body)
		return nil, fmt.Errorf("%w: GET %s", err, u)
	}
	return body, nil
}

// BlocksVerified reports true: [Client.Block] returns only bytes that hash
// to the CID asked for. A walker that finds this method on its syncer (see
// package ingest) trusts it and does not hash the block a second time.
func (c *Client) BlocksVerified() bool { return true }

// ReleaseBlock gives back block, returned by [Client.Block], for a later
// Block of any Client to read another body into. The caller must hold no
// reference into it afterwards, and give each block back at most once. A
// walker of package ingest gives back the entry chunks it has indexed.
// Giving back is optional: a block not given back is garbage collected. A
// type that embeds a Client and keeps the blocks it returns (a cache) must
// not pass this method on.
func (c *Client) ReleaseBlock(block []byte) { putBuf(block) }

// checkHash checks that data hashes to k's multihash.
func checkHash(k cid.Cid, data []byte) error {
	dec, err := multihash.Decode(k.Hash())
	if err != nil {
		return fmt.Errorf("ipnisync: block %s: CID multihash: %v", k, err)
	}
	if dec.Code == multihash.IDENTITY {
		if !bytes.Equal(dec.Digest, data) {
			return fmt.Errorf("%w: block %s: identity CID does not hold the bytes served", ErrHashMismatch, k)
		}
		return nil
	}
	got, err := k.Prefix().Sum(data)
	if err != nil {
		return fmt.Errorf("ipnisync: block %s: cannot hash: %v", k, err)
	}
	if !bytes.Equal(got.Hash(), k.Hash()) {
		return fmt.Errorf("%w: block %s: bytes served hash to %s", ErrHashMismatch, k, got.Hash().B58String())
	}
	return nil
}

// Close releases the client's idle connections. It is idempotent; a
// client may still be used after Close, at the cost of new connections.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if c.ownTr != nil {
			c.ownTr.CloseIdleConnections()
		}
	})
	return nil
}

// get fetches the resource rsrc under the protocol path and returns its
// body (at most limit bytes, gzip decoded) and the URL that answered. With
// allowNoContent a 204 answer returns a nil body.
func (c *Client) get(ctx context.Context, rsrc string, limit int64, allowNoContent bool) ([]byte, string, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	timedOut := func(u string, err error) error {
		if ctx.Err() == nil && rctx.Err() != nil {
			return fmt.Errorf("%w after %v: GET %s: %w", ErrTimeout, c.timeout, u, err)
		}
		return fmt.Errorf("ipnisync: GET %s: %w", u, err)
	}

	bases := c.bases
	start := int(c.cur.Load())
	if c.p2p != nil {
		base, err := c.p2p.resolve(rctx, c.hc)
		if err != nil {
			return nil, c.p2p.base.String(), timedOut(c.p2p.base.String(), err)
		}
		bases, start = []*url.URL{base}, 0
	}

	var resp *http.Response
	var u string
	for i := range bases {
		idx := (start + i) % len(bases)
		u = bases[idx].JoinPath(rsrc).String()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, u, fmt.Errorf("ipnisync: GET %s: %w", u, err)
		}
		req.Header.Set("Accept", "application/json, application/cbor;q=0.9, */*;q=0.8")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err = c.hc.Do(req)
		if err != nil {
			if rctx.Err() != nil || i == len(bases)-1 {
				return nil, u, timedOut(u, err)
			}
			c.logger.Debug("ipnisync: request failed, trying the next address", "url", u, "err", err)
			continue
		}
		if len(bases) > 1 {
			c.cur.Store(int32(idx))
		}
		break
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNoContent && allowNoContent:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1024))
		return nil, u, nil
	default:
		// The body is the publisher's text: it goes to the debug log, never
		// into the error, which ends up in status answers and provider
		// records served to anyone.
		if c.logger.Enabled(ctx, slog.LevelDebug) {
			snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
			c.logger.Debug("ipnisync: unexpected status", "url", u, "status", resp.StatusCode, "body", cleanSnippet(snippet))
		}
		return nil, u, newStatusError(u, resp.StatusCode)
	}

	var body io.Reader = resp.Body
	if strings.EqualFold(strings.TrimSpace(resp.Header.Get("Content-Encoding")), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, u, timedOut(u, fmt.Errorf("gzip: %w", err))
		}
		defer zr.Close()
		body = zr
	} else if resp.ContentLength > limit {
		return nil, u, fmt.Errorf("%w: GET %s: Content-Length %d exceeds the limit of %d bytes", ErrBlockTooLarge, u, resp.ContentLength, limit)
	}
	var data []byte
	var err error
	if body == resp.Body && resp.ContentLength >= 0 {
		data, err = readExactly(body, resp.ContentLength)
	} else {
		data, err = io.ReadAll(io.LimitReader(body, limit+1))
	}
	if err != nil {
		return nil, u, timedOut(u, fmt.Errorf("read body: %w", err))
	}
	if int64(len(data)) > limit {
		return nil, u, fmt.Errorf("%w: GET %s: body exceeds the limit of %d bytes", ErrBlockTooLarge, u, limit)
	}
	return data, u, nil
}

// readExactly reads a body of n bytes (its Content-Length, within the
// limit) into a buffer of that length (a released one, when there is one of
// its size class), in place of io.ReadAll's growing copies, and reads on to
// the end so that the connection is reused.
// net/http fails a body that ends early; one that goes on is refused.
func readExactly(body io.Reader, n int64) ([]byte, error) {
	data := getBuf(n)
	if _, err := io.ReadFull(body, data); err != nil {
		putBuf(data)
		return nil, err
	}
	var more [1]byte
	switch k, err := body.Read(more[:]); {
	case k > 0:
		putBuf(data)
		return nil, fmt.Errorf("body longer than its Content-Length %d", n)
	case err != nil && err != io.EOF:
		putBuf(data)
		return nil, err
	}
	return data, nil
}

// cleanSnippet makes the start of an error body fit for a log line.
func cleanSnippet(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), string(utf8.RuneError)))
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// httpURL converts an HTTP multiaddr to its base URL:
// /ip4|ip6|dns|dns4|dns6/<host>[/tcp/<port>][/tls[/sni/<name>]]/http|https[/http-path/<escaped path>].
// A trailing /p2p/<id> is ignored. ok is false for a multiaddr that has no
// /http or /https component (a libp2p address).
func httpURL(a ma.Multiaddr) (u *url.URL, ok bool, err error) {
	var host, port, path string
	scheme := ""
	tls := false
	for _, comp := range a {
		switch comp.Code() {
		case ma.P_IP4, ma.P_IP6, ma.P_DNS, ma.P_DNS4, ma.P_DNS6:
			host = comp.Value()
		case ma.P_TCP:
			port = comp.Value()
		case ma.P_TLS:
			tls = true
		case ma.P_HTTP:
			scheme = "http"
		case ma.P_HTTPS:
			scheme = "https"
		case ma.P_HTTP_PATH:
			path = string(comp.RawValue())
		}
	}
	if scheme == "" {
		return nil, false, nil
	}
	if tls {
		scheme = "https"
	}
	if host == "" {
		return nil, false, fmt.Errorf("HTTP multiaddr %s has no host", a)
	}
	if port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, false, fmt.Errorf("HTTP multiaddr %s: port %q", a, port)
		}
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return &url.URL{Scheme: scheme, Host: host, Path: path}, true, nil
}
