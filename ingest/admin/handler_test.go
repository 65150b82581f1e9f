package admin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

// TestContract hits the handler with every route, method and status code of
// the reference's admin API (ipni-facts §2.3) and indexkit's additions.
func TestContract(t *testing.T) {
	self, pub, pub2, frozen := testID(t, 1), testID(t, 2), testID(t, 3), testID(t, 4)
	handoffBody := jsonf(`{"FrozenID":%q,"FrozenURL":"http://127.0.0.1:3000"}`, frozen)
	other := errors.New("disk on fire")
	adCid := mustCid(t, "ad")
	retryAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	type tc struct {
		name     string
		method   string
		target   string
		body     string
		header   map[string]string
		node     func(f *fakeNode) admin.Node // nil: the fake as is
		status   int
		wantBody string // exact body; "" checks an empty body unless bodyHas is set
		bodyHas  string // substring of the body instead
		wantJSON string // JSON body, compared as JSON
		code     string // ErrorHeader
		allow    string // Allow header
		calls    []string
	}
	wantErr := func(f *fakeNode, method string, err error) admin.Node {
		f.setErr(method, err)
		return f
	}
	cases := []tc{
		// POST /ingest/assign/{id}
		{name: "assign", method: "POST", target: "/ingest/assign/" + pub.String(), status: 200,
			calls: []string{"Assign " + pub.String()}},
		{name: "assign/already", method: "POST", target: "/ingest/assign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Assign", admin.ErrAlreadyAssigned) },
			status: 400, wantBody: "publisher already assigned to this indexer\n", code: "already-assigned"},
		{name: "assign/policy", method: "POST", target: "/ingest/assign/" + pub.String(),
			node: func(f *fakeNode) admin.Node {
				return wantErr(f, "Assign", fmt.Errorf("denied: %w", admin.ErrNotAllowed))
			},
			status: 403, wantBody: "publisher not allowed by policy\n", code: "not-allowed"},
		{name: "assign/no assigner", method: "POST", target: "/ingest/assign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Assign", admin.ErrNoAssigner) },
			status: 503, code: "no-assigner", bodyHas: "assigner"},
		{name: "assign/frozen", method: "POST", target: "/ingest/assign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Assign", fmt.Errorf("assign: %w", admin.ErrFrozen)) },
			status: 500, wantBody: "indexer is frozen\n", code: "frozen"},
		{name: "assign/other error", method: "POST", target: "/ingest/assign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Assign", other) },
			status: 500, wantBody: "disk on fire\n", code: "internal"},
		{name: "assign/bad id", method: "POST", target: "/ingest/assign/nope", status: 400,
			bodyHas: `bad peer id "nope"`, code: "bad-request", calls: []string{}},
		{name: "assign/missing id", method: "POST", target: "/ingest/assign/", status: 400,
			wantBody: "missing peer id\n", code: "bad-request"},
		{name: "assign/extra segment", method: "POST", target: "/ingest/assign/" + pub.String() + "/x", status: 400,
			bodyHas: "bad peer id", code: "bad-request"},
		{name: "assign/GET", method: "GET", target: "/ingest/assign/" + pub.String(), status: 405, allow: "POST", bodyHas: "method not allowed"},
		{name: "assign/OPTIONS", method: "OPTIONS", target: "/ingest/assign/" + pub.String(), status: 200, allow: "POST"},

		// PUT /ingest/unassign/{id}
		{name: "unassign", method: "PUT", target: "/ingest/unassign/" + pub.String(), status: 200,
			calls: []string{"Unassign " + pub.String()}},
		{name: "unassign/not assigned", method: "PUT", target: "/ingest/unassign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Unassign", admin.ErrNotAssigned) },
			status: 404, wantBody: "peer was not assigned\n", code: "not-assigned"},
		{name: "unassign/no assigner", method: "PUT", target: "/ingest/unassign/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Unassign", admin.ErrNoAssigner) },
			status: 503, code: "no-assigner", bodyHas: "assigner"},
		{name: "unassign/POST", method: "POST", target: "/ingest/unassign/" + pub.String(), status: 405, allow: "PUT", bodyHas: "method"},

		// GET /ingest/assigned
		{name: "assigned", method: "GET", target: "/ingest/assigned",
			node: func(f *fakeNode) admin.Node {
				f.assigned = []admin.Assignment{{Publisher: pub}, {Publisher: pub2, Continued: frozen}}
				return f
			},
			status: 200, calls: []string{"Assigned"},
			wantJSON: jsonf(`[{"Publisher":%q},{"Publisher":%q,"Continued":%q}]`, pub, pub2, frozen)},
		{name: "assigned/none", method: "GET", target: "/ingest/assigned", status: 204},
		{name: "assigned/unavailable", method: "GET", target: "/ingest/assigned",
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Assigned", admin.ErrUnavailable) },
			status: 503, wantBody: "indexer unavailable\n", code: "unavailable"},
		{name: "assigned/POST", method: "POST", target: "/ingest/assigned", status: 405, allow: "GET", bodyHas: "method"},

		// GET /ingest/preferred
		{name: "preferred", method: "GET", target: "/ingest/preferred",
			node:     func(f *fakeNode) admin.Node { f.preferred = []peer.ID{pub, pub2}; return f },
			status:   200,
			wantJSON: jsonf(`[%q,%q]`, pub, pub2)},
		{name: "preferred/none", method: "GET", target: "/ingest/preferred", status: 204},

		// POST /ingest/handoff/{id}
		{name: "handoff/no content type", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			status: 200, calls: []string{"Handoff " + pub.String()}},
		{name: "handoff/json content type", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			header: map[string]string{"Content-Type": "application/json"}, status: 200},
		{name: "handoff/missing body", method: "POST", target: "/ingest/handoff/" + pub.String(),
			status: 400, wantBody: "missing handoff data\n", code: "bad-request", calls: []string{}},
		{name: "handoff/bad json", method: "POST", target: "/ingest/handoff/" + pub.String(), body: `{"FrozenID":`,
			status: 400, bodyHas: "bad handoff data", code: "bad-request", calls: []string{}},
		{name: "handoff/trailing data", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody + "{}",
			status: 400, bodyHas: "bad handoff data", code: "bad-request"},
		{name: "handoff/missing FrozenID", method: "POST", target: "/ingest/handoff/" + pub.String(),
			body: `{"FrozenURL":"http://127.0.0.1:3000"}`, status: 400, bodyHas: "missing FrozenID", code: "bad-request"},
		{name: "handoff/bad FrozenID", method: "POST", target: "/ingest/handoff/" + pub.String(),
			body: `{"FrozenID":"12D3bogus","FrozenURL":"http://127.0.0.1:3000"}`, status: 400, bodyHas: `bad FrozenID "12D3bogus"`, code: "bad-request"},
		{name: "handoff/missing FrozenURL", method: "POST", target: "/ingest/handoff/" + pub.String(),
			body: jsonf(`{"FrozenID":%q}`, frozen), status: 400, bodyHas: "missing FrozenURL", code: "bad-request"},
		{name: "handoff/relative FrozenURL", method: "POST", target: "/ingest/handoff/" + pub.String(),
			body: jsonf(`{"FrozenID":%q,"FrozenURL":"indexer:3000"}`, frozen), status: 400, bodyHas: "bad FrozenURL", code: "bad-request"},
		{name: "handoff/already assigned", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Handoff", admin.ErrAlreadyAssigned) },
			status: 400, wantBody: "publisher already assigned to this indexer\n", code: "already-assigned"},
		{name: "handoff/policy", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Handoff", admin.ErrNotAllowed) },
			status: 403, code: "not-allowed", bodyHas: "policy"},
		{name: "handoff/no assigner", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Handoff", admin.ErrNoAssigner) },
			status: 503, code: "no-assigner", bodyHas: "assigner"},
		{name: "handoff/receiver frozen", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Handoff", admin.ErrFrozen) },
			status: 500, wantBody: "indexer is frozen\n", code: "frozen"},
		{name: "handoff/unknown publisher", method: "POST", target: "/ingest/handoff/" + pub.String(), body: handoffBody,
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Handoff", admin.ErrUnknownPublisher) },
			status: 404, wantBody: "frozen indexer has no provider for publisher\n", code: "unknown-publisher"},
		{name: "handoff/PUT", method: "PUT", target: "/ingest/handoff/" + pub.String(), status: 405, allow: "POST", bodyHas: "method"},

		// GET /status
		{name: "status", method: "GET", target: "/status",
			node:   func(f *fakeNode) admin.Node { f.status = admin.Status{Frozen: true, ID: self, Usage: 91.5}; return f },
			status: 200, wantJSON: jsonf(`{"Frozen":true,"ID":%q,"Usage":91.5}`, self), calls: []string{"Status"}},
		{name: "status/usage unknown", method: "GET", target: "/status",
			node:   func(f *fakeNode) admin.Node { f.status = admin.Status{ID: self, Usage: -1}; return f },
			status: 200, wantJSON: jsonf(`{"Frozen":false,"ID":%q,"Usage":-1}`, self)},
		{name: "status/PUT", method: "PUT", target: "/status", status: 405, allow: "GET", bodyHas: "method"},
		{name: "status/trailing slash", method: "GET", target: "/status/", status: 404, bodyHas: "not found"},

		// PUT /freeze
		{name: "freeze", method: "PUT", target: "/freeze", status: 200, calls: []string{"Freeze"}},
		{name: "freeze/disabled", method: "PUT", target: "/freeze",
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Freeze", admin.ErrDisabled) },
			status: 400, wantBody: "freezing disabled\n", code: "disabled"},
		{name: "freeze/GET", method: "GET", target: "/freeze", status: 405, allow: "PUT", bodyHas: "method"},
		{name: "freeze/not supported", method: "PUT", target: "/freeze",
			node:   func(f *fakeNode) admin.Node { return coreNode{f} },
			status: 501, code: "not-supported", bodyHas: "not supported"},

		// POST /ingest/sync/{id}
		{name: "sync", method: "POST", target: "/ingest/sync/" + pub.String(), status: 202,
			calls: []string{"Sync " + pub.String()}},
		{name: "sync/depth resync addr", method: "POST", target: "/ingest/sync/" + pub.String() + "?depth=10&resync=true",
			body: `"/ip4/127.0.0.1/tcp/3104"`, status: 202},
		{name: "sync/already syncing", method: "POST", target: "/ingest/sync/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return wantErr(f, "Sync", admin.ErrSyncing) },
			status: 409, code: "syncing", bodyHas: "sync in progress"},
		{name: "sync/bad depth", method: "POST", target: "/ingest/sync/" + pub.String() + "?depth=ten",
			status: 400, bodyHas: `bad depth "ten"`, calls: []string{}, code: "bad-request"},
		{name: "sync/bad resync", method: "POST", target: "/ingest/sync/" + pub.String() + "?resync=maybe",
			status: 400, bodyHas: `bad resync "maybe"`, code: "bad-request"},
		{name: "sync/body not a string", method: "POST", target: "/ingest/sync/" + pub.String(), body: `{"addr":1}`,
			status: 400, bodyHas: "bad sync address", code: "bad-request"},
		{name: "sync/bad multiaddr", method: "POST", target: "/ingest/sync/" + pub.String(), body: `"/ip4/nope"`,
			status: 400, bodyHas: `bad sync address "/ip4/nope"`, code: "bad-request"},
		{name: "sync/GET", method: "GET", target: "/ingest/sync/" + pub.String(), status: 405, allow: "POST", bodyHas: "method"},
		{name: "sync/not supported", method: "POST", target: "/ingest/sync/" + pub.String(),
			node:   func(f *fakeNode) admin.Node { return coreNode{f} },
			status: 501, code: "not-supported", bodyHas: "not supported"},

		// GET /ingest/status
		{name: "ingest status", method: "GET", target: "/ingest/status",
			node: func(f *fakeNode) admin.Node {
				f.ingest = []admin.PublisherStatus{{Publisher: pub, Head: adCid, Pending: 3, Walking: true,
					AdsWalked: 7, AdsApplied: 4, EntriesIndexed: 400, Failures: 1, RetryAt: retryAt, LastError: "timeout"}}
				return f
			},
			status: 200, calls: []string{"IngestStatus"},
			wantJSON: jsonf(`[{"Publisher":%q,"Announced":null,"Head":{"/":%q},"LastHead":null,"Pending":3,"Walking":true,`+
				`"AdsWalked":7,"AdsApplied":4,"EntriesIndexed":400,"Failures":1,"RetryAt":"2026-01-02T03:04:05Z","LastError":"timeout"}]`,
				pub, adCid)},
		{name: "ingest status/none", method: "GET", target: "/ingest/status", status: 204},
		{name: "ingest status/not supported", method: "GET", target: "/ingest/status",
			node:   func(f *fakeNode) admin.Node { return coreNode{f} },
			status: 501, code: "not-supported", bodyHas: "not supported"},

		// Not served here.
		{name: "announce goes to the ingest listener", method: "PUT", target: "/ingest/announce", body: "\x84",
			header: map[string]string{"Content-Type": "application/octet-stream"}, status: 404, bodyHas: "not found"},
		{name: "unknown path", method: "GET", target: "/healthcheck", status: 404, bodyHas: "not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeNode(self)
			var node admin.Node = f
			if c.node != nil {
				node = c.node(f)
			}
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			w := do(t, newHandler(t, node), c.method, c.target, body, c.header)
			got := w.Body.String()
			if w.Code != c.status {
				t.Fatalf("status %d, want %d (body %q)", w.Code, c.status, got)
			}
			switch {
			case c.wantJSON != "":
				if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
				if !jsonEqual(t, got, c.wantJSON) {
					t.Errorf("body\n %s\nwant\n %s", got, c.wantJSON)
				}
			case c.bodyHas != "":
				if !strings.Contains(got, c.bodyHas) {
					t.Errorf("body %q lacks %q", got, c.bodyHas)
				}
			default:
				if got != c.wantBody {
					t.Errorf("body %q, want %q", got, c.wantBody)
				}
			}
			if code := w.Header().Get(admin.ErrorHeader); code != c.code {
				t.Errorf("%s %q, want %q", admin.ErrorHeader, code, c.code)
			}
			if allow := w.Header().Get("Allow"); allow != c.allow {
				t.Errorf("Allow %q, want %q", allow, c.allow)
			}
			if c.calls != nil && !slices.Equal(f.Calls(), c.calls) {
				t.Errorf("node calls %q, want %q", f.Calls(), c.calls)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func mustCid(t testing.TB, s string) cid.Cid {
	t.Helper()
	mh, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.DagJSON, mh)
}

// TestHandoffAndSyncRequests checks what the handler passes to the Node.
func TestHandoffAndSyncRequests(t *testing.T) {
	pub, frozen := testID(t, 2), testID(t, 4)
	f := newFakeNode(testID(t, 1))
	h := newHandler(t, f)

	body := jsonf(`{"FrozenID":%q,"FrozenURL":"https://frozen.example:3000/base","Extra":1}`, frozen)
	if w := do(t, h, "POST", "/ingest/handoff/"+pub.String(), strings.NewReader(body), nil); w.Code != 200 {
		t.Fatalf("handoff: %d %q", w.Code, w.Body)
	}
	want := admin.HandoffRequest{FrozenID: frozen, FrozenURL: "https://frozen.example:3000/base"}
	if len(f.handoffs) != 1 || f.handoffs[0] != want {
		t.Fatalf("handoffs %+v, want %+v", f.handoffs, want)
	}

	for _, c := range []struct {
		query, body string
		want        admin.SyncRequest
	}{
		{"", "", admin.SyncRequest{}},
		{"?depth=-1", "", admin.SyncRequest{Depth: -1}},
		{"?depth=10&resync=true", `"/ip4/127.0.0.1/tcp/3104"`,
			admin.SyncRequest{Addr: multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104"), Depth: 10, Resync: true}},
	} {
		f.syncs = nil
		var rd io.Reader
		if c.body != "" {
			rd = strings.NewReader(c.body)
		}
		if w := do(t, h, "POST", "/ingest/sync/"+pub.String()+c.query, rd, nil); w.Code != 202 {
			t.Fatalf("sync%s: %d %q", c.query, w.Code, w.Body)
		}
		got := f.syncs[0]
		if got.Depth != c.want.Depth || got.Resync != c.want.Resync || !got.Addr.Equal(c.want.Addr) {
			t.Errorf("sync%s: %+v, want %+v", c.query, got, c.want)
		}
	}
	if w := do(t, h, "POST", "/ingest/sync/"+pub.String()+"?depth=-2", nil, nil); w.Code != 400 {
		t.Errorf("depth -2: %d", w.Code)
	}
}

// TestReferenceAssignerSequence replays, over a real listener, the requests
// a reference assigner makes in the form its admin client builds them.
func TestReferenceAssignerSequence(t *testing.T) {
	self, pub, pub2, frozen := testID(t, 1), testID(t, 2), testID(t, 3), testID(t, 4)
	f := newFakeNode(self)
	f.assigned = []admin.Assignment{{Publisher: pub2, Continued: frozen}}
	srv, _ := serve(t, f, nil)
	hc := srv.Client()

	send := func(method, path, body string, want int) string {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %q, want %d", method, path, resp.StatusCode, data, want)
		}
		return string(data)
	}

	// Startup rebuild: assigned, status, preferred.
	if got := send("GET", "/ingest/assigned", "", 200); !jsonEqual(t, got, jsonf(`[{"Publisher":%q,"Continued":%q}]`, pub2, frozen)) {
		t.Errorf("assigned %s", got)
	}
	if got := send("GET", "/status", "", 200); !jsonEqual(t, got, jsonf(`{"Frozen":false,"ID":%q,"Usage":12.5}`, self)) {
		t.Errorf("status %s", got)
	}
	send("GET", "/ingest/preferred", "", 204)
	// Assignment; the announce that follows goes to the ingest listener,
	// which this handler is not.
	send("POST", "/ingest/assign/"+pub.String(), "", 200)
	send("PUT", "/ingest/announce", "\x83", 404)
	// Handoff: JSON body, no Content-Type (http.NewRequest sets none).
	send("POST", "/ingest/handoff/"+pub.String(), jsonf(`{"FrozenID":%q,"FrozenURL":"http://127.0.0.1:3000"}`, frozen), 200)

	want := []string{"Assigned", "Status", "Preferred", "Assign " + pub.String(), "Handoff " + pub.String()}
	if !slices.Equal(f.Calls(), want) {
		t.Errorf("calls %q, want %q", f.Calls(), want)
	}
}

func TestToken(t *testing.T) {
	pub := testID(t, 2)
	f := newFakeNode(testID(t, 1))
	h := newHandler(t, f, admin.WithToken("s3cret"))
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Bearer s3cre", 401},
		{"Bearer s3cret2", 401},
		{"Basic s3cret", 401},
		{"s3cret", 401},
		{"Bearer s3cret", 200},
		{"bearer s3cret", 200},
	} {
		hdr := map[string]string{}
		if c.auth != "" {
			hdr["Authorization"] = c.auth
		}
		w := do(t, h, "POST", "/ingest/assign/"+pub.String(), nil, hdr)
		if w.Code != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, w.Code, c.want)
		}
		if c.want == 401 {
			if w.Header().Get("WWW-Authenticate") == "" || w.Header().Get(admin.ErrorHeader) != "unauthorized" {
				t.Errorf("Authorization %q: headers %v", c.auth, w.Header())
			}
		}
	}
	// Unauthenticated requests reach nothing, not even the route table.
	if w := do(t, h, "GET", "/nowhere", nil, nil); w.Code != 401 {
		t.Errorf("unknown path without token: %d", w.Code)
	}
	if got := f.Calls(); len(got) != 2 {
		t.Errorf("node calls %q, want two assigns", got)
	}
	// Without WithToken, no header is needed.
	if w := do(t, newHandler(t, f), "GET", "/status", nil, nil); w.Code != 200 {
		t.Errorf("no token configured: %d", w.Code)
	}
}

func TestBodyLimit(t *testing.T) {
	pub, frozen := testID(t, 2), testID(t, 4)
	f := newFakeNode(testID(t, 1))
	pad := strings.Repeat(" ", admin.DefaultMaxRequestBody)
	body := jsonf(`{"FrozenID":%q,"FrozenURL":"http://127.0.0.1:3000"}`, frozen)

	w := do(t, newHandler(t, f), "POST", "/ingest/handoff/"+pub.String(), strings.NewReader(body+pad), nil)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "8192") {
		t.Errorf("default limit: %d %q", w.Code, w.Body)
	}
	if w := do(t, newHandler(t, f), "POST", "/ingest/handoff/"+pub.String(), strings.NewReader(body+pad[:100]), nil); w.Code != 200 {
		t.Errorf("under the limit: %d %q", w.Code, w.Body)
	}

	small := newHandler(t, f, admin.WithMaxRequestBody(64))
	if w := do(t, small, "POST", "/ingest/handoff/"+pub.String(), strings.NewReader(body), nil); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("WithMaxRequestBody(64): %d", w.Code)
	}
	if w := do(t, small, "POST", "/ingest/sync/"+pub.String(), strings.NewReader(`"/ip4/127.0.0.1/tcp/1"`+pad[:64]), nil); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("sync over the limit: %d", w.Code)
	}
	if got := f.Calls(); len(got) != 1 {
		t.Errorf("node calls %q, want one handoff", got)
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	f := newFakeNode(testID(t, 1))
	f.setErr("Assign", admin.ErrFrozen)
	pub := testID(t, 2)
	h := newHandler(t, f, admin.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	do(t, h, "POST", "/ingest/assign/"+pub.String(), nil, nil)
	if got := buf.String(); !strings.Contains(got, "publisher="+pub.String()) || !strings.Contains(got, "status=500") {
		t.Errorf("log %q", got)
	}
}

func TestNilNode(t *testing.T) {
	w := do(t, newHandler(t, nil), "GET", "/status", nil, nil)
	if w.Code != 503 || w.Header().Get(admin.ErrorHeader) != "unavailable" {
		t.Errorf("nil node: %d %v", w.Code, w.Header())
	}
}
