package piece

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// httpURL returns the base URL of an HTTP publisher multiaddr
// (/ip4|ip6|dns|dns4|dns6/<host>/tcp/<port>[/tls]/http|https[/http-path/<p>]),
// and false for any other address (libp2p transports).
func httpURL(a multiaddr.Multiaddr) (string, bool) {
	var host, port, scheme, path string
	for _, c := range a {
		switch c.Protocol().Code {
		case multiaddr.P_IP4, multiaddr.P_DNS, multiaddr.P_DNS4, multiaddr.P_DNS6:
			host = c.Value()
		case multiaddr.P_IP6:
			host = "[" + c.Value() + "]"
		case multiaddr.P_TCP:
			port = c.Value()
		case multiaddr.P_TLS:
			scheme = "https"
		case multiaddr.P_HTTP:
			if scheme == "" {
				scheme = "http"
			}
		case multiaddr.P_HTTPS:
			scheme = "https"
		case multiaddr.P_HTTP_PATH:
			path = string(c.RawValue())
		case multiaddr.P_P2P, multiaddr.P_SNI:
		default:
			return "", false
		}
	}
	if host == "" || scheme == "" {
		return "", false
	}
	if port != "" {
		host += ":" + port
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return (&url.URL{Scheme: scheme, Host: host, Path: path}).String(), true
}

// httpAddrs returns the HTTP addresses among addrs, and the URL of the
// first.
func httpAddrs(addrs []multiaddr.Multiaddr) ([]multiaddr.Multiaddr, string) {
	var out []multiaddr.Multiaddr
	first := ""
	for _, a := range addrs {
		if u, ok := httpURL(a); ok {
			out = append(out, a)
			if first == "" {
				first = u
			}
		}
	}
	return out, first
}

// urlMultiaddr turns an http or https URL into the multiaddr of the IPNI
// HTTP publisher protocol.
func urlMultiaddr(raw string) (multiaddr.Multiaddr, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("URL %q: scheme %q, want http or https", raw, u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("URL %q has no host", raw)
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	s := "/dns/" + host
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() != nil {
			s = "/ip4/" + host
		} else {
			s = "/ip6/" + host
		}
	}
	s += "/tcp/" + port + "/" + u.Scheme
	if p := strings.Trim(u.Path, "/"); p != "" {
		s += "/http-path/" + url.PathEscape(p)
	}
	return multiaddr.NewMultiaddr(s)
}

// parsePublisher reads a publisher given by configuration: an http(s) URL,
// or a multiaddr, with or without /p2p/<id>. It returns the publisher's ID
// when the address names it, its HTTP multiaddr and its URL.
func parsePublisher(s string) (peer.ID, multiaddr.Multiaddr, string, error) {
	if !strings.HasPrefix(s, "/") {
		a, err := urlMultiaddr(s)
		if err != nil {
			return "", nil, "", err
		}
		u, _ := httpURL(a)
		return "", a, u, nil
	}
	a, err := multiaddr.NewMultiaddr(s)
	if err != nil {
		return "", nil, "", fmt.Errorf("publisher %q: %w", s, err)
	}
	var id peer.ID
	if v, err := a.ValueForProtocol(multiaddr.P_P2P); err == nil {
		if id, err = peer.Decode(v); err != nil {
			return "", nil, "", fmt.Errorf("publisher %q: %w", s, err)
		}
		a, _ = multiaddr.SplitLast(a) // /p2p/ is last in a publisher address
	}
	u, ok := httpURL(a)
	if !ok {
		return "", nil, "", fmt.Errorf("publisher %q: %w", s, errUnsupported)
	}
	return id, a, u, nil
}
