package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// TestClientRoundTrip calls every endpoint through the Client against the
// handler on 127.0.0.1, in the order a reference assigner does.
func TestClientRoundTrip(t *testing.T) {
	ctx := t.Context()
	self, pub, pub2, frozen := testID(t, 1), testID(t, 2), testID(t, 3), testID(t, 4)
	f := newFakeNode(self)
	_, c := serve(t, f, nil)

	// Empty lists are 204s.
	if got, err := c.Assigned(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Assigned (none): %v, %v", got, err)
	}
	if got, err := c.Preferred(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Preferred (none): %v, %v", got, err)
	}
	if got, err := c.IngestStatus(ctx); err != nil || len(got) != 0 {
		t.Fatalf("IngestStatus (none): %v, %v", got, err)
	}

	f.assigned = []admin.Assignment{{Publisher: pub}, {Publisher: pub2, Continued: frozen}}
	f.preferred = []peer.ID{pub2}
	f.status = admin.Status{Frozen: true, ID: self, Usage: 97.25}
	f.ingest = []admin.PublisherStatus{{
		Publisher: pub, Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")},
		Announced: mustCid(t, "a"), Head: mustCid(t, "h"), Pending: 2, Walking: true, AdsWalked: 5,
		RetryAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LastError: "boom",
	}}

	assigned, err := c.Assigned(ctx)
	if err != nil || !slices.Equal(assigned, f.assigned) {
		t.Errorf("Assigned: %v, %v; want %v", assigned, err, f.assigned)
	}
	st, err := c.Status(ctx)
	if err != nil || st != f.status {
		t.Errorf("Status: %+v, %v; want %+v", st, err, f.status)
	}
	preferred, err := c.Preferred(ctx)
	if err != nil || !slices.Equal(preferred, f.preferred) {
		t.Errorf("Preferred: %v, %v", preferred, err)
	}
	if err := c.Assign(ctx, pub); err != nil {
		t.Errorf("Assign: %v", err)
	}
	hreq := admin.HandoffRequest{FrozenID: frozen, FrozenURL: "http://127.0.0.1:3000"}
	if err := c.Handoff(ctx, pub2, hreq); err != nil {
		t.Errorf("Handoff: %v", err)
	}
	if err := c.Unassign(ctx, pub); err != nil {
		t.Errorf("Unassign: %v", err)
	}
	if err := c.Freeze(ctx); err != nil {
		t.Errorf("Freeze: %v", err)
	}
	sreq := admin.SyncRequest{Addr: multiaddr.StringCast("/dns4/pub.example/tcp/443/https"), Depth: -1, Resync: true}
	if err := c.Sync(ctx, pub, sreq); err != nil {
		t.Errorf("Sync: %v", err)
	}
	if err := c.Sync(ctx, pub, admin.SyncRequest{}); err != nil {
		t.Errorf("Sync (defaults): %v", err)
	}
	progress, err := c.IngestStatus(ctx)
	if err != nil || len(progress) != 1 {
		t.Fatalf("IngestStatus: %v, %v", progress, err)
	}
	p, w := progress[0], f.ingest[0]
	if p.Publisher != w.Publisher || !p.Announced.Equals(w.Announced) || !p.Head.Equals(w.Head) || p.LastHead.Defined() ||
		p.Pending != 2 || !p.Walking || p.AdsWalked != 5 || !p.RetryAt.Equal(w.RetryAt) || p.LastError != "boom" ||
		len(p.Addrs) != 1 || !p.Addrs[0].Equal(w.Addrs[0]) {
		t.Errorf("IngestStatus: %+v, want %+v", p, w)
	}

	wantCalls := []string{"Assigned", "Preferred", "IngestStatus",
		"Assigned", "Status", "Preferred", "Assign " + pub.String(), "Handoff " + pub2.String(),
		"Unassign " + pub.String(), "Freeze", "Sync " + pub.String(), "Sync " + pub.String(), "IngestStatus"}
	if !slices.Equal(f.Calls(), wantCalls) {
		t.Errorf("calls\n %q\nwant\n %q", f.Calls(), wantCalls)
	}
	if len(f.handoffs) != 1 || f.handoffs[0] != hreq {
		t.Errorf("handoffs %+v", f.handoffs)
	}
	if len(f.syncs) != 2 || !f.syncs[0].Addr.Equal(sreq.Addr) || f.syncs[0].Depth != -1 || !f.syncs[0].Resync ||
		f.syncs[1].Addr != nil || f.syncs[1].Depth != 0 || f.syncs[1].Resync {
		t.Errorf("syncs %+v", f.syncs)
	}
}

// TestClientSentinels checks that each sentinel a Node returns comes out of
// the Client as the same sentinel, with the URL and status named.
func TestClientSentinels(t *testing.T) {
	ctx := t.Context()
	pub, frozen := testID(t, 2), testID(t, 4)
	hreq := admin.HandoffRequest{FrozenID: frozen, FrozenURL: "http://127.0.0.1:3000"}
	calls := map[string]func(c *admin.Client) error{
		"Assign":       func(c *admin.Client) error { return c.Assign(ctx, pub) },
		"Unassign":     func(c *admin.Client) error { return c.Unassign(ctx, pub) },
		"Handoff":      func(c *admin.Client) error { return c.Handoff(ctx, pub, hreq) },
		"Freeze":       func(c *admin.Client) error { return c.Freeze(ctx) },
		"Sync":         func(c *admin.Client) error { return c.Sync(ctx, pub, admin.SyncRequest{}) },
		"Assigned":     func(c *admin.Client) error { _, err := c.Assigned(ctx); return err },
		"Preferred":    func(c *admin.Client) error { _, err := c.Preferred(ctx); return err },
		"Status":       func(c *admin.Client) error { _, err := c.Status(ctx); return err },
		"IngestStatus": func(c *admin.Client) error { _, err := c.IngestStatus(ctx); return err },
	}
	for _, c := range []struct {
		method string
		err    error
		status int
		path   string
	}{
		{"Assign", admin.ErrAlreadyAssigned, 400, "/ingest/assign/"},
		{"Assign", admin.ErrNotAllowed, 403, "/ingest/assign/"},
		{"Assign", admin.ErrNoAssigner, 503, "/ingest/assign/"},
		{"Assign", admin.ErrFrozen, 500, "/ingest/assign/"},
		{"Unassign", admin.ErrNotAssigned, 404, "/ingest/unassign/"},
		{"Handoff", admin.ErrAlreadyAssigned, 400, "/ingest/handoff/"},
		{"Handoff", admin.ErrUnknownPublisher, 404, "/ingest/handoff/"},
		{"Handoff", admin.ErrFrozen, 500, "/ingest/handoff/"},
		{"Handoff", admin.ErrUnknownIndexer, 403, "/ingest/handoff/"},
		{"Handoff", admin.ErrBadFrozenAt, 422, "/ingest/handoff/"},
		{"Handoff", admin.ErrUpstream, 502, "/ingest/handoff/"},
		{"Freeze", admin.ErrDisabled, 400, "/freeze"},
		{"Sync", admin.ErrSyncing, 409, "/ingest/sync/"},
		{"Assigned", admin.ErrUnavailable, 503, "/ingest/assigned"},
		{"Preferred", admin.ErrUnavailable, 503, "/ingest/preferred"},
		{"Status", context.DeadlineExceeded, 503, "/status"},
		{"IngestStatus", admin.ErrUnavailable, 503, "/ingest/status"},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.method, c.status), func(t *testing.T) {
			f := newFakeNode(testID(t, 1))
			f.setErr(c.method, fmt.Errorf("node detail: %w", c.err))
			_, cl := serve(t, f, nil)
			err := calls[c.method](cl)
			want := c.err
			if errors.Is(want, context.DeadlineExceeded) {
				want = admin.ErrUnavailable
			}
			if !errors.Is(err, want) {
				t.Fatalf("err %v, want errors.Is %v", err, want)
			}
			var se *admin.StatusError
			if !errors.As(err, &se) || se.Code != c.status || !strings.Contains(se.URL, c.path) {
				t.Fatalf("err %#v, want a StatusError %d on %s", err, c.status, c.path)
			}
			if msg := err.Error(); !strings.Contains(msg, "http://127.0.0.1:") || !strings.Contains(msg, fmt.Sprint(c.status)) {
				t.Errorf("error %q does not name the URL and status", msg)
			}
		})
	}

	// A handoff that failed upstream: 502, whose body is the error's text
	// (which names the frozen indexer and its status), not a fixed one.
	t.Run("upstream text", func(t *testing.T) {
		f := newFakeNode(testID(t, 1))
		f.setErr("Handoff", fmt.Errorf("%w: GET http://frozen.example/providers: 503 Service Unavailable", admin.ErrUpstream))
		_, cl := serve(t, f, nil)
		err := cl.Handoff(ctx, pub, hreq)
		var se *admin.StatusError
		if !errors.As(err, &se) || se.Code != 502 || !errors.Is(err, admin.ErrUpstream) ||
			!strings.Contains(se.Body, "http://frozen.example/providers: 503") {
			t.Errorf("err %#v, want a 502 StatusError wrapping ErrUpstream whose body names the frozen indexer's failure", err)
		}
	})
	t.Run("not supported", func(t *testing.T) {
		_, cl := serve(t, coreNode{newFakeNode(testID(t, 1))}, nil)
		for _, m := range []string{"Freeze", "Sync", "IngestStatus"} {
			if err := calls[m](cl); !errors.Is(err, admin.ErrNotSupported) {
				t.Errorf("%s: %v, want ErrNotSupported", m, err)
			}
		}
	})
	t.Run("internal", func(t *testing.T) {
		f := newFakeNode(testID(t, 1))
		f.setErr("Assign", errors.New("disk on fire"))
		_, cl := serve(t, f, nil)
		err := cl.Assign(ctx, pub)
		var se *admin.StatusError
		if !errors.As(err, &se) || se.Err != nil || se.Code != 500 || se.Body != "disk on fire" {
			t.Errorf("err %#v", err)
		}
	})
}

// TestClientReferenceFallback maps the statuses of a node that sends no
// ErrorHeader, as a reference indexer answers them.
func TestClientReferenceFallback(t *testing.T) {
	ctx := t.Context()
	pub, frozen := testID(t, 2), testID(t, 4)
	for _, c := range []struct {
		name   string
		status int
		call   func(c *admin.Client) error
		want   error
	}{
		{"assign 400", 400, func(c *admin.Client) error { return c.Assign(ctx, pub) }, admin.ErrAlreadyAssigned},
		{"assign 403", 403, func(c *admin.Client) error { return c.Assign(ctx, pub) }, admin.ErrNotAllowed},
		{"assign 503", 503, func(c *admin.Client) error { return c.Assign(ctx, pub) }, admin.ErrNoAssigner},
		{"unassign 404", 404, func(c *admin.Client) error { return c.Unassign(ctx, pub) }, admin.ErrNotAssigned},
		{"handoff 400", 400, func(c *admin.Client) error {
			return c.Handoff(ctx, pub, admin.HandoffRequest{FrozenID: frozen, FrozenURL: "http://x:3000"})
		}, admin.ErrAlreadyAssigned},
		{"freeze 400", 400, func(c *admin.Client) error { return c.Freeze(ctx) }, admin.ErrDisabled},
		{"sync 409", 409, func(c *admin.Client) error { return c.Sync(ctx, pub, admin.SyncRequest{}) }, admin.ErrSyncing},
		{"assigned 503", 503, func(c *admin.Client) error { _, err := c.Assigned(ctx); return err }, admin.ErrUnavailable},
		{"ingest status 404", 404, func(c *admin.Client) error { _, err := c.IngestStatus(ctx); return err }, admin.ErrNotSupported},
		{"assign 500", 500, func(c *admin.Client) error { return c.Assign(ctx, pub) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "", c.status) // the reference's answer: no code, often no text
			}))
			defer srv.Close()
			cl, err := admin.NewClient(strings.TrimPrefix(srv.URL, "http://"), admin.WithHTTPClient(srv.Client()))
			if err != nil {
				t.Fatal(err)
			}
			err = c.call(cl)
			var se *admin.StatusError
			if !errors.As(err, &se) || se.Code != c.status || se.Err != c.want {
				t.Errorf("err %v (sentinel %v), want %v", err, se.Err, c.want)
			}
		})
	}
}

func TestClientToken(t *testing.T) {
	ctx := t.Context()
	f := newFakeNode(testID(t, 1))
	opts := []admin.Option{admin.WithToken("s3cret")}
	_, good := serve(t, f, opts, admin.WithClientToken("s3cret"))
	if _, err := good.Status(ctx); err != nil {
		t.Errorf("with token: %v", err)
	}
	_, none := serve(t, f, opts)
	if _, err := none.Status(ctx); !errors.Is(err, admin.ErrUnauthorized) {
		t.Errorf("without token: %v", err)
	}
	_, wrong := serve(t, f, opts, admin.WithClientToken("guess"))
	if err := wrong.Assign(ctx, testID(t, 2)); !errors.Is(err, admin.ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
	if got := f.Calls(); !slices.Equal(got, []string{"Status"}) {
		t.Errorf("node calls %q", got)
	}
}

func TestClientLimitsAndInput(t *testing.T) {
	ctx := t.Context()
	f := newFakeNode(testID(t, 1))
	for i := range 20 {
		f.assigned = append(f.assigned, admin.Assignment{Publisher: testID(t, byte(10+i))})
	}
	_, c := serve(t, f, nil, admin.WithMaxResponseBody(256))
	if _, err := c.Assigned(ctx); err == nil || !strings.Contains(err.Error(), "larger than 256 bytes") {
		t.Errorf("over the response limit: %v", err)
	}

	// Bad arguments fail before any request.
	pub := testID(t, 2)
	for name, err := range map[string]error{
		"assign empty":       c.Assign(ctx, ""),
		"unassign empty":     c.Unassign(ctx, ""),
		"sync empty":         c.Sync(ctx, "", admin.SyncRequest{}),
		"handoff no frozen":  c.Handoff(ctx, pub, admin.HandoffRequest{FrozenURL: "http://x"}),
		"handoff bad url":    c.Handoff(ctx, pub, admin.HandoffRequest{FrozenID: pub, FrozenURL: "x:3000"}),
		"handoff no publisr": c.Handoff(ctx, "", admin.HandoffRequest{FrozenID: pub, FrozenURL: "http://x"}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if got := f.Calls(); !slices.Equal(got, []string{"Assigned"}) {
		t.Errorf("node calls %q", got)
	}

	for _, bad := range []string{"", "ftp://host", "http://", "http://[::1"} {
		if _, err := admin.NewClient(bad); err == nil {
			t.Errorf("NewClient(%q): no error", bad)
		}
	}
	cl, err := admin.NewClient("user:pw@127.0.0.1:3002/prefix/")
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.String(); got != "http://user:xxxxx@127.0.0.1:3002/prefix" {
		t.Errorf("String %q", got)
	}
}

// TestClientPrefix mounts the handler under a path prefix.
func TestClientPrefix(t *testing.T) {
	f := newFakeNode(testID(t, 1))
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", newHandler(t, f)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := admin.NewClient(srv.URL+"/admin", admin.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(t.Context(), testID(t, 2)); err != nil {
		t.Fatal(err)
	}
}

// TestClientBadResponses checks that malformed answers fail with the URL
// named, and tolerates an empty Continued.
func TestClientBadResponses(t *testing.T) {
	ctx := t.Context()
	pub := testID(t, 2)
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	c, err := admin.NewClient(srv.URL, admin.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}

	body = fmt.Sprintf(`[{"Publisher":%q,"Continued":""}]`, pub)
	if got, err := c.Assigned(ctx); err != nil || len(got) != 1 || got[0] != (admin.Assignment{Publisher: pub}) {
		t.Errorf("empty Continued: %v, %v", got, err)
	}
	for _, c2 := range []struct {
		body string
		call func() error
	}{
		{`[{"Publisher":"nope"}]`, func() error { _, err := c.Assigned(ctx); return err }},
		{fmt.Sprintf(`[{"Publisher":%q,"Continued":"nope"}]`, pub), func() error { _, err := c.Assigned(ctx); return err }},
		{`{"Frozen":false,"Usage":1}`, func() error { _, err := c.Status(ctx); return err }},
		{`{"Frozen":"yes"}`, func() error { _, err := c.Status(ctx); return err }},
		{`["nope"]`, func() error { _, err := c.Preferred(ctx); return err }},
	} {
		body = c2.body
		err := c2.call()
		if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "decoding response") {
			t.Errorf("body %s: %v", c2.body, err)
		}
	}
}

// TestClientQuotesAnswers: an answer that is not the node's (a proxy's
// HTML page, with 200 or an error status) is quoted in the error by its
// start, on one bounded line, not by the one character encoding/json
// shows or by every line of the page.
func TestClientQuotesAnswers(t *testing.T) {
	const title = "<title>504 Gateway Time-out</title>"
	page := "<html>\r\n<head>" + title + "</head>\n<body>\n" + strings.Repeat("<center>nginx</center>\n", 100) + "</body></html>\n"
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	c, err := admin.NewClient(srv.URL, admin.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	for _, status = range []int{http.StatusOK, http.StatusGatewayTimeout} {
		_, err := c.Status(t.Context())
		if msg := fmt.Sprint(err); !strings.Contains(msg, title) || strings.ContainsAny(msg, "\r\n") || len(msg) > 500 {
			t.Errorf("%d: error %q, want the start of the answer (%s) on one bounded line", status, msg, title)
		}
	}
}
