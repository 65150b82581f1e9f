package ipnisync_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// counting wraps h and counts its requests.
func counting(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// The default client refuses a publisher on loopback before connecting;
// the private pool's policy reaches it.
func TestDefaultPolicyRefusesLoopback(t *testing.T) {
	pub, _, ch, _ := startPublisher(t, 1)
	var hits atomic.Int64
	guarded := httptest.NewServer(counting(pub, &hits))
	t.Cleanup(guarded.Close)
	ai := peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, guarded, "")}}

	c := newRawClient(t, ai)
	_, err := c.Head(context.Background())
	var ae *netpolicy.AddressError
	if !errors.Is(err, netpolicy.ErrForbiddenAddress) || !errors.As(err, &ae) || ae.Range != netpolicy.RangeLoopback {
		t.Fatalf("Head with the default policy: %v, want a loopback AddressError", err)
	}
	byURL, err := ipnisync.NewURL(guarded.URL, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer byURL.Close()
	if _, err := byURL.Block(context.Background(), ch.head); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Fatalf("Block with the default policy: %v, want ErrForbiddenAddress", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the publisher got %d requests from refused clients", n)
	}

	if got, err := newClient(t, ai).Head(context.Background()); err != nil || !got.Equals(ch.head) {
		t.Fatalf("Head with AllowPrivate: %s, %v; want %s", got, err, ch.head)
	}
}

// A redirect is not followed, by the client's own transport nor by a
// caller's client whose CheckRedirect would follow it.
func TestRedirectRefused(t *testing.T) {
	pub, _, _, _ := startPublisher(t, 1)
	var targetHits atomic.Int64
	counted := httptest.NewServer(counting(pub, &targetHits))
	t.Cleanup(counted.Close)
	redirector := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, counted.URL+r.URL.Path, http.StatusFound)
	})
	ai := peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, redirector, "")}}

	caller := &http.Client{} // follows up to 10 redirects
	for name, c := range map[string]*ipnisync.Client{
		"own transport":  newClient(t, ai),
		"WithHTTPClient": newRawClient(t, ai, ipnisync.WithHTTPClient(caller)),
	} {
		if _, err := c.Head(context.Background()); !errors.Is(err, netpolicy.ErrRedirect) {
			t.Errorf("%s: Head through a redirect: %v, want ErrRedirect", name, err)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
	if caller.CheckRedirect != nil {
		t.Fatal("the caller's client was modified")
	}
	caller.CloseIdleConnections()
}

func TestDialPolicyConflicts(t *testing.T) {
	id := peerID(t, seededKey(t, 1))
	ai := peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/198.51.100.1/tcp/80/http")}}
	if _, err := ipnisync.New(ai, ipnisync.WithDialPolicy(privatePool), ipnisync.WithHTTPClient(&http.Client{})); err == nil {
		t.Error("WithDialPolicy with WithHTTPClient: no error (the policy would be ignored)")
	}
	if _, err := ipnisync.NewURL("http://198.51.100.1", id, ipnisync.WithHTTPClient(&http.Client{}), ipnisync.WithDialPolicy(nil)); err == nil {
		t.Error("NewURL, WithDialPolicy with WithHTTPClient: no error")
	}
	h := newHost(t, nil)
	if _, err := ipnisync.New(ai, ipnisync.WithDialPolicy(privatePool), ipnisync.WithLibp2p(h)); err == nil {
		t.Error("WithDialPolicy with WithLibp2p: no error (the policy would be ignored)")
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// A publisher's error body reaches no error: errors end up in statuses
// and provider records anyone can read. It is logged at DEBUG only.
func TestErrorBodyNotEchoed(t *testing.T) {
	const marker = "MARKER-7f3a9c-secret-from-upstream"
	pub, _, ch, _ := startPublisher(t, 1)
	for _, code := range []int{http.StatusNotFound, http.StatusInternalServerError, http.StatusForbidden, http.StatusTooManyRequests} {
		srv := serveFunc(t, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, marker+" at the start, and "+marker+" again", code)
		})
		ai := peer.AddrInfo{ID: pub.ID(), Addrs: []ma.Multiaddr{maddr(t, srv, "")}}
		var log syncBuffer
		debug := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := newClient(t, ai, ipnisync.WithLogger(debug))
		_, herr := c.Head(context.Background())
		_, berr := c.Block(context.Background(), ch.head)
		for _, err := range []error{herr, berr} {
			var se *ipnisync.StatusError
			if !errors.As(err, &se) || se.Code != code {
				t.Fatalf("%d: %v, want a StatusError %d", code, err, code)
			}
			if strings.Contains(err.Error(), "MARKER") {
				t.Errorf("%d: the error quotes the publisher's body: %v", code, err)
			}
		}
		if !strings.Contains(log.String(), marker) {
			t.Errorf("%d: the body is not in the debug log:\n%s", code, log.String())
		}

		quiet := newClient(t, ai) // discards logs
		if _, err := quiet.Head(context.Background()); err == nil || strings.Contains(err.Error(), "MARKER") {
			t.Errorf("%d: Head with the default logger: %v", code, err)
		}
	}
}

func TestGaterCheckAddr(t *testing.T) {
	strict := ipnisync.NewGater(nil)
	private := ipnisync.NewGater(privatePool)
	for _, c := range []struct {
		addr          string
		strict, alloc bool
	}{
		{"/ip4/198.51.100.7/tcp/4001", true, true},
		{"/ip6/2606:4700::1111/udp/4001/quic-v1", true, true},
		{"/ip4/127.0.0.1/tcp/4001", false, true},
		{"/ip4/10.0.0.5/tcp/4001/p2p/12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq", false, true},
		{"/ip6/::1/tcp/4001", false, true},
		{"/ip6/::ffff:127.0.0.1/tcp/4001", false, true},
		{"/ip6zone/eth0/ip6/fe80::1/tcp/4001", false, true},
		{"/ip4/169.254.169.254/tcp/80", false, false},
		{"/ip4/224.0.0.1/udp/4001", false, false},
		{"/dns4/localhost/tcp/4001", false, false}, // unresolved: refused
		{"/dnsaddr/example.com", false, false},
	} {
		a := ma.StringCast(c.addr)
		if got := strict.InterceptAddrDial("", a); got != c.strict {
			t.Errorf("strict gater, %s: %v, want %v", c.addr, got, c.strict)
		}
		if got := private.InterceptAddrDial("", a); got != c.alloc {
			t.Errorf("AllowPrivate gater, %s: %v, want %v", c.addr, got, c.alloc)
		}
		if err := strict.CheckAddr(a); (err == nil) != c.strict || err != nil && !errors.Is(err, netpolicy.ErrForbiddenAddress) {
			t.Errorf("CheckAddr(%s) = %v", c.addr, err)
		}
	}
}

// A host built with a strict gater does not dial a publisher on loopback;
// with the private pool's gater it does.
func TestGaterOnHost(t *testing.T) {
	key := seededKey(t, 1)
	src := newMemSource()
	ch := buildChain(t, src, key, 1)
	pub, err := ipnisync.NewPublisher(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), ch.head); err != nil {
		t.Fatal(err)
	}
	server := serveLibp2p(t, pub, key)
	info := peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}

	gated := func(g *ipnisync.Gater) *ipnisync.Client {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay(),
			libp2p.DisableMetrics(), libp2p.ConnectionGater(g))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return newRawClient(t, info, ipnisync.WithLibp2p(h))
	}
	if _, err := gated(ipnisync.NewGater(nil)).Head(context.Background()); err == nil {
		t.Fatal("Head over a host with a strict gater reached a loopback publisher")
	}
	if got, err := gated(ipnisync.NewGater(privatePool)).Head(context.Background()); err != nil || !got.Equals(ch.head) {
		t.Fatalf("Head over a host with an AllowPrivate gater: %s, %v", got, err)
	}
}
