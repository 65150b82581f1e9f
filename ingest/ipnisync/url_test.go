package ipnisync

import (
	"testing"

	ma "github.com/multiformats/go-multiaddr"
)

func TestHTTPURL(t *testing.T) {
	for _, tt := range []struct {
		addr, url string
		isHTTP    bool
	}{
		{"/ip4/127.0.0.1/tcp/3000/http", "http://127.0.0.1:3000", true},
		{"/ip4/127.0.0.1/tcp/3000/http/http-path/%2Fsub%2Fpath", "http://127.0.0.1:3000/sub/path", true},
		{"/ip4/127.0.0.1/tcp/3000/http/http-path/sub", "http://127.0.0.1:3000/sub", true},
		{"/dns4/example.com/tcp/443/https", "https://example.com:443", true},
		{"/dns/example.com/tcp/443/tls/http", "https://example.com:443", true},
		{"/dns/example.com/https", "https://example.com", true},
		{"/ip6/::1/tcp/80/http", "http://[::1]:80", true},
		{"/ip6/::1/http", "http://[::1]", true},
		{"/ip4/127.0.0.1/tcp/3000/http/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA", "http://127.0.0.1:3000", true},
		{"/ip4/127.0.0.1/tcp/4001", "", false},
		{"/ip4/127.0.0.1/udp/4001/quic-v1", "", false},
	} {
		u, ok, err := httpURL(ma.StringCast(tt.addr))
		if err != nil || ok != tt.isHTTP {
			t.Errorf("%s: ok %v, %v", tt.addr, ok, err)
			continue
		}
		if ok && u.String() != tt.url {
			t.Errorf("%s: %s, want %s", tt.addr, u, tt.url)
		}
	}
}
