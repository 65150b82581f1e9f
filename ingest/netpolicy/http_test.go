package netpolicy_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// countingServer is a loopback HTTP server that counts the connections it
// accepts and the requests of each path.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
	hits  map[string]*atomic.Int64
}

func newCountingServer(t *testing.T, h http.Handler, paths ...string) *countingServer {
	t.Helper()
	s := &countingServer{hits: map[string]*atomic.Int64{}}
	for _, p := range paths {
		s.hits[p] = &atomic.Int64{}
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := s.hits[r.URL.Path]; n != nil {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, hc *http.Client, u string) (int, error) {
	t.Helper()
	t.Cleanup(hc.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestClientLoopback(t *testing.T) {
	srv := newCountingServer(t, ok)

	_, err := get(t, mustNew(t).Client(), srv.URL)
	var ae *netpolicy.AddressError
	if !errors.Is(err, netpolicy.ErrForbiddenAddress) || !errors.As(err, &ae) || ae.Range != netpolicy.RangeLoopback {
		t.Fatalf("default policy, GET %s: %v, want a loopback AddressError", srv.URL, err)
	}
	var nilPolicy *netpolicy.Policy
	if _, err := get(t, nilPolicy.Client(), srv.URL); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Fatalf("nil policy, GET %s: %v, want ErrForbiddenAddress", srv.URL, err)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Fatalf("the server accepted %d connections from refused dials, want 0: the check must run before connecting", n)
	}

	code, err := get(t, mustNew(t, netpolicy.AllowPrivate()).Client(), srv.URL)
	if err != nil || code != http.StatusNoContent {
		t.Fatalf("AllowPrivate, GET %s: %d %v, want 204", srv.URL, code, err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("the server accepted %d connections, want 1", n)
	}
}

// A name that resolves to loopback is refused: the check sees the
// resolved address, not the name.
func TestClientLocalhost(t *testing.T) {
	srv := newCountingServer(t, ok)
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	byName := "http://" + net.JoinHostPort("localhost", port) + "/"

	if _, err := get(t, mustNew(t).Client(), byName); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Fatalf("default policy, GET %s: %v, want ErrForbiddenAddress", byName, err)
	}
	ctx := context.Background()
	if c, err := mustNew(t).DialContext(ctx, "tcp", net.JoinHostPort("localhost", port)); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("default policy, dial localhost:%s: %v, want ErrForbiddenAddress", port, err)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Fatalf("the server accepted %d connections from refused dials, want 0", n)
	}
	// The name does reach the server when private addresses are allowed.
	if code, err := get(t, mustNew(t, netpolicy.AllowPrivate()).Client(), byName); err != nil || code != http.StatusNoContent {
		t.Fatalf("AllowPrivate, GET %s: %d %v, want 204", byName, code, err)
	}
}

func TestClientRefusesRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/from", http.RedirectHandler("/to", http.StatusFound))
	mux.Handle("/away", http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusMovedPermanently))
	mux.Handle("/to", ok)
	srv := newCountingServer(t, mux, "/from", "/to", "/away")
	hc := mustNew(t, netpolicy.AllowPrivate(), netpolicy.AllowCloudMetadata()).Client()

	for _, path := range []string{"/from", "/away"} {
		_, err := get(t, hc, srv.URL+path)
		if !errors.Is(err, netpolicy.ErrRedirect) {
			t.Fatalf("GET %s: %v, want ErrRedirect", path, err)
		}
		if srv.hits[path].Load() != 1 {
			t.Fatalf("GET %s reached the server %d times, want 1", path, srv.hits[path].Load())
		}
	}
	if n := srv.hits["/to"].Load(); n != 0 {
		t.Fatalf("the redirect target was requested %d times, want 0", n)
	}
}

func TestDialContextNonTCP(t *testing.T) {
	ctx := context.Background()
	p := mustNew(t, netpolicy.AllowPrefixes())
	if c, err := p.DialContext(ctx, "udp", "127.0.0.1:53"); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial udp 127.0.0.1:53: %v, want ErrForbiddenAddress", err)
	}
	sock := filepath.Join(t.TempDir(), "s")
	if c, err := p.DialContext(ctx, "unix", sock); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial unix %s: %v, want ErrForbiddenAddress (only IP networks are dialled)", sock, err)
	}
}

func TestTransport(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://198.51.100.1:3128")
	t.Setenv("HTTPS_PROXY", "http://198.51.100.1:3128")
	tr := mustNew(t).Transport()
	defer tr.CloseIdleConnections()
	if tr.Proxy != nil {
		t.Error("Transport().Proxy is set: a proxy would connect out of the policy's sight")
	}
	if !tr.DisableCompression {
		t.Error("Transport().DisableCompression is false: ipnisync asks for gzip itself")
	}
	if tr.DialContext == nil || tr.DialTLSContext != nil {
		t.Error("Transport() must dial through the policy's DialContext only")
	}
}
