package admin_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
)

// rebound returns a client of the handler at srvURL that reaches it under
// name: every connection goes to srvURL's address, as after a DNS
// rebinding of name to 127.0.0.1, and the requests carry Host name:port.
func rebound(t *testing.T, srvURL, name string, copts ...admin.ClientOption) (*admin.Client, string) {
	t.Helper()
	u, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}}
	t.Cleanup(hc.CloseIdleConnections)
	base := "http://" + name + ":" + u.Port()
	c, err := admin.NewClient(base, append([]admin.ClientOption{admin.WithHTTPClient(hc)}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, base
}

// Without a token, the handler answers only a loopback Host (or a name of
// WithAllowedHosts): a DNS-rebound page's PUT /freeze and POST
// /ingest/assign, sent over real HTTP to 127.0.0.1 with Host
// rebind.evil.example:PORT, are refused 421 with the code not-local and
// a body naming the Host, and reach nothing; the Client returns
// ErrNotLocal. The same requests to Host 127.0.0.1:PORT work.
func TestForeignHostRefused(t *testing.T) {
	ctx := t.Context()
	f := newFakeNode(testID(t, 1))
	srv, local := serve(t, f, nil)
	evil, base := rebound(t, srv.URL, "rebind.evil.example")

	err := evil.Freeze(ctx)
	var se *admin.StatusError
	if !errors.Is(err, admin.ErrNotLocal) || !errors.As(err, &se) || se.Code != http.StatusMisdirectedRequest {
		t.Fatalf("rebound freeze: %v, want 421 ErrNotLocal", err)
	}
	if want := "Host " + strings.TrimPrefix(base, "http://") + " is not a loopback address"; !strings.Contains(se.Body, want) || !strings.Contains(se.Body, "-admin-hosts") {
		t.Errorf("body %q, want it to say %q and name -admin-hosts", se.Body, want)
	}
	if err := evil.Assign(ctx, testID(t, 2)); !errors.Is(err, admin.ErrNotLocal) {
		t.Errorf("rebound assign: %v, want ErrNotLocal", err)
	}
	if _, err := evil.Status(ctx); !errors.Is(err, admin.ErrNotLocal) {
		t.Errorf("rebound status: %v, want ErrNotLocal (a rebound page would read it)", err)
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Fatalf("the node was called through a foreign Host: %q", calls)
	}

	if err := local.Freeze(ctx); err != nil {
		t.Errorf("freeze to 127.0.0.1: %v", err)
	}
	if err := local.Assign(ctx, testID(t, 2)); err != nil {
		t.Errorf("assign to 127.0.0.1: %v", err)
	}
	if calls := f.Calls(); !slices.Equal(calls, []string{"Freeze", "Assign " + testID(t, 2).String()}) {
		t.Errorf("node calls %q, want the freeze and the assign sent to 127.0.0.1", calls)
	}
}

// A request a web page sent (an Origin header, or a Sec-Fetch-Site other
// than none) is refused 403 by a handler without a token, whatever its
// method, path or Host.
func TestWebPageRefused(t *testing.T) {
	f := newFakeNode(testID(t, 1))
	srv, _ := serve(t, f, nil)
	pub := testID(t, 2)
	for _, c := range []struct {
		method, path, header, value string
	}{
		{"POST", "/ingest/assign/" + pub.String(), "Origin", "http://127.0.0.2:8080"},
		{"POST", "/ingest/assign/" + pub.String(), "Origin", "null"},
		{"PUT", "/freeze", "Origin", srv.URL},
		{"OPTIONS", "/freeze", "Origin", "http://127.0.0.2:8080"},
		{"GET", "/status", "Sec-Fetch-Site", "cross-site"},
		{"POST", "/ingest/sync/" + pub.String(), "Sec-Fetch-Site", "same-site"},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(c.header, c.value)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get(admin.ErrorHeader) != "not-local" || !strings.Contains(string(body), c.header+" "+c.value) {
			t.Errorf("%s %s with %s %s: %d %s %q, want 403 not-local naming the header", c.method, c.path, c.header, c.value, resp.StatusCode, resp.Header.Get(admin.ErrorHeader), body)
		}
	}
	if calls := f.Calls(); len(calls) != 0 {
		t.Errorf("the node was called by a web page's request: %q", calls)
	}
}

// WithAllowedHosts lets a name through; with a token the Host is not
// checked (the token is what a page cannot send).
func TestAllowedHostsAndToken(t *testing.T) {
	ctx := t.Context()
	f := newFakeNode(testID(t, 1))
	srv, _ := serve(t, f, []admin.Option{admin.WithAllowedHosts("Indexer-0.internal")})
	named, _ := rebound(t, srv.URL, "indexer-0.internal")
	if err := named.Freeze(ctx); err != nil {
		t.Errorf("freeze to an allowed name: %v", err)
	}
	other, _ := rebound(t, srv.URL, "indexer-1.internal")
	if err := other.Freeze(ctx); !errors.Is(err, admin.ErrNotLocal) || !strings.Contains(err.Error(), "indexer-0.internal") {
		t.Errorf("freeze to another name: %v, want ErrNotLocal listing the allowed name", err)
	}

	tsrv, _ := serve(t, f, []admin.Option{admin.WithToken("s3cret")})
	withToken, _ := rebound(t, tsrv.URL, "indexer.example", admin.WithClientToken("s3cret"))
	if err := withToken.Freeze(ctx); err != nil {
		t.Errorf("freeze with the token under any name: %v", err)
	}
	if calls := f.Calls(); !slices.Equal(calls, []string{"Freeze", "Freeze"}) {
		t.Errorf("node calls %q, want two freezes", calls)
	}

	for _, h := range []string{"indexer:3002", "http://indexer", ""} {
		if _, err := admin.NewHandler(f, admin.WithAllowedHosts(h)); !errors.Is(err, admin.ErrInvalidOption) || !strings.Contains(err.Error(), "WithAllowedHosts") {
			t.Errorf("WithAllowedHosts(%q): %v, want ErrInvalidOption naming it", h, err)
		}
	}
}
