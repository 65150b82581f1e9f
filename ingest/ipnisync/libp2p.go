package ipnisync

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/internal/httperr"
)

// wellKnownLimit bounds the well-known resource a client reads, as
// libp2phttp does.
const wellKnownLimit = 8 << 10

// p2pPath is the protocol path of a publisher reached over libp2p streams.
// A libp2phttp server lists where each protocol is mounted in its
// well-known resource; the client reads it on first use, and falls back to
// IPNIPath when the server has no such resource or does not list the
// protocol.
type p2pPath struct {
	base *url.URL // http://<peer ID>: the stream transport ignores the host

	mu       sync.Mutex
	resolved *url.URL
}

func (c *Client) useLibp2p(h host.Host, pub peer.AddrInfo) error {
	var addrs []ma.Multiaddr
	for _, a := range pub.Addrs {
		if _, isHTTP, _ := httpURL(a); !isHTTP {
			addrs = append(addrs, a)
		}
	}
	lh := &libp2phttp.Host{StreamHost: h}
	// ServerMustAuthenticatePeerID forces the stream transport, whose
	// security handshake authenticates the publisher's peer ID.
	rt, err := lh.NewConstrainedRoundTripper(peer.AddrInfo{ID: pub.ID, Addrs: addrs}, libp2phttp.ServerMustAuthenticatePeerID)
	if err != nil {
		return fmt.Errorf("ipnisync: new client: libp2p transport to %s: %w", pub.ID, err)
	}
	c.hc = &http.Client{Transport: rt, CheckRedirect: netpolicy.RefuseRedirect}
	c.p2p = &p2pPath{base: &url.URL{Scheme: "http", Host: pub.ID.String()}}
	return nil
}

// resolve returns the base URL of the protocol, reading the well-known
// resource the first time.
func (p *p2pPath) resolve(ctx context.Context, hc *http.Client) (*url.URL, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resolved != nil {
		return p.resolved, nil
	}
	path, err := wellKnownPath(ctx, hc, p.base.JoinPath(libp2phttp.WellKnownProtocols).String())
	if err != nil {
		return nil, err
	}
	p.resolved = p.base.JoinPath(path)
	return p.resolved, nil
}

func wellKnownPath(ctx context.Context, hc *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return IPNIPath, nil
	default:
		return "", newStatusError(u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, wellKnownLimit+1))
	if err != nil {
		return "", fmt.Errorf("read well-known resource: %w", err)
	}
	if len(body) > wellKnownLimit {
		return "", fmt.Errorf("well-known resource %s exceeds %d bytes", u, wellKnownLimit)
	}
	var meta map[string]struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return "", fmt.Errorf("well-known resource %s: %w", u, httperr.JSONError(err))
	}
	path := strings.TrimSuffix(meta[string(ProtocolID)].Path, "/")
	if path == "" {
		return IPNIPath, nil
	}
	return path, nil
}
