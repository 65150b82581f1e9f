package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/store/memory"
)

// adminHandler is the thinnest admin API an indexer could mount for
// POST /ingest/handoff/{id}: decode, hand off, answer errors as
// assigner/admin's handler does (writeAdminError).
func adminHandler(r *handoff.Receiver) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ingest/handoff/{id}", func(w http.ResponseWriter, req *http.Request) {
		pub, err := peer.Decode(req.PathValue("id"))
		if err != nil {
			writeAdminError(w, fmt.Errorf("%w: %v", handoff.ErrInvalidRequest, err))
			return
		}
		hr, err := handoff.DecodeRequest(req.Body)
		if err == nil {
			err = r.Handoff(req.Context(), pub, hr)
		}
		if err != nil {
			writeAdminError(w, err)
		}
	})
	return mux
}

// writeAdminError answers err as the assigner/admin wire contract says:
// a sentinel's status, Indexkit-Error code and fixed body, or 500 with the
// error's text. (This package's tests may not import assigner.)
func writeAdminError(w http.ResponseWriter, err error) {
	for _, row := range []struct {
		err        error
		status     int
		code, body string
	}{
		{handoff.ErrFrozen, 500, "frozen", "indexer is frozen"},
		{handoff.ErrAlreadyAssigned, 400, "already-assigned", "publisher already assigned to this indexer"},
		{handoff.ErrNotAllowed, 403, "not-allowed", "publisher not allowed by policy"},
		{handoff.ErrUnknownPublisher, 404, "unknown-publisher", "frozen indexer has no provider for publisher"},
		{handoff.ErrInvalidRequest, 400, "bad-request", err.Error()},
	} {
		if errors.Is(err, row.err) {
			w.Header().Set("Indexkit-Error", row.code)
			http.Error(w, row.body, row.status)
			return
		}
	}
	w.Header().Set("Indexkit-Error", "internal")
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func TestClientWire(t *testing.T) {
	pub, frozen := peerID(t, "publisher"), peerID(t, "frozen")
	var mu sync.Mutex
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, body = r, string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	c, err := handoff.NewClient(handoff.WithClientToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimPrefix(srv.URL, "http://") // no scheme: http:// is added
	if err := c.Handoff(context.Background(), admin, pub, handoff.Request{FrozenID: frozen, FrozenURL: "http://10.0.0.1:3000"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Method != http.MethodPost || got.URL.Path != "/ingest/handoff/"+pub.String() {
		t.Errorf("request %s %s", got.Method, got.URL.Path)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer s3cret" {
		t.Errorf("Authorization %q", a)
	}
	want := `{"FrozenID":"` + frozen.String() + `","FrozenURL":"http://10.0.0.1:3000"}`
	if body != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
}

func TestClientStatus(t *testing.T) {
	pub, frozen := peerID(t, "publisher"), peerID(t, "frozen")
	tests := []struct {
		code   int
		header string
		body   string
		want   error
	}{
		// A reference indexer: no header.
		{400, "", "publisher already assigned to this indexer", handoff.ErrAlreadyAssigned},
		{403, "", "", handoff.ErrNotAllowed},
		{503, "", "not configured to work with assigner service", handoff.ErrUnavailable},
		{500, "", "", handoff.ErrServer},
		{404, "", "404 page not found", handoff.ErrServer},
		// An indexkit admin API: the header names the sentinel.
		{500, "frozen", "indexer is frozen", handoff.ErrFrozen},
		{404, "unknown-publisher", "frozen indexer has no provider for publisher", handoff.ErrUnknownPublisher},
		{400, "already-assigned", "publisher already assigned to this indexer", handoff.ErrAlreadyAssigned},
		{400, "bad-request", "bad request", handoff.ErrInvalidRequest},
		{503, "no-assigner", "", handoff.ErrUnavailable},
		// A failure to read the frozen indexer, as the error's text.
		{500, "internal", "handoff: invalid providers answer from frozen indexer: GET", handoff.ErrInvalidProviders},
		{500, "internal", "handoff: frozen indexer unreachable or failing: GET", handoff.ErrFrozenIndexer},
		{500, "internal", "disk on fire", handoff.ErrServer},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tt.header != "" {
				w.Header().Set("Indexkit-Error", tt.header)
			}
			http.Error(w, tt.body, tt.code)
		}))
		c, _ := handoff.NewClient()
		err := c.Handoff(context.Background(), srv.URL, pub, handoff.Request{FrozenID: frozen, FrozenURL: "http://x"})
		srv.Close()
		var se *handoff.StatusError
		if !errors.As(err, &se) || se.Code != tt.code || se.Body != tt.body {
			t.Errorf("%d %q: %v: want a StatusError with code and body", tt.code, tt.body, err)
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%d %q: %v, want %v", tt.code, tt.body, err, tt.want)
		}
	}
}

func TestClientInvalid(t *testing.T) {
	c, _ := handoff.NewClient()
	ctx := context.Background()
	pub, frozen := peerID(t, "publisher"), peerID(t, "frozen")
	for name, err := range map[string]error{
		"no publisher": c.Handoff(ctx, "http://127.0.0.1:1", "", handoff.Request{FrozenID: frozen, FrozenURL: "http://x"}),
		"no FrozenID":  c.Handoff(ctx, "http://127.0.0.1:1", pub, handoff.Request{FrozenURL: "http://x"}),
		"no FrozenURL": c.Handoff(ctx, "http://127.0.0.1:1", pub, handoff.Request{FrozenID: frozen}),
		"bad admin":    c.Handoff(ctx, "ftp://x", pub, handoff.Request{FrozenID: frozen, FrozenURL: "http://x"}),
	} {
		if !errors.Is(err, handoff.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := handoff.NewClient(handoff.WithClientToken("")); !errors.Is(err, handoff.ErrInvalidOption) {
		t.Errorf("empty token: %v", err)
	}
	// Nothing listens on the port: a transport error, no StatusError.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := c.Handoff(ctx, url, pub, handoff.Request{FrozenID: frozen, FrozenURL: "http://x"})
	var se *handoff.StatusError
	if err == nil || errors.As(err, &se) {
		t.Errorf("closed server: %v", err)
	}
}

// TestClientReceiverRoundTrip: the client's errors are the receiver's,
// through an admin handler that answers as assigner/admin does; and a
// reference-style request without Content-Type is accepted.
func TestClientReceiverRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	st := memory.New()
	defer st.Close()
	frozen := false
	var fmu sync.Mutex
	r := newReceiver(t, st, f.ingest(), newMapDS(), handoff.WithFrozen(func() bool {
		fmu.Lock()
		defer fmu.Unlock()
		return frozen
	}))
	admin := httptest.NewServer(adminHandler(r))
	defer admin.Close()
	c, _ := handoff.NewClient()
	req := handoff.Request{FrozenID: f.frozenID, FrozenURL: node.URL}

	// The reference assigner's request: JSON body, no Content-Type.
	hreq, _ := http.NewRequest(http.MethodPost, admin.URL+"/ingest/handoff/"+f.pub.String(),
		strings.NewReader(`{"FrozenID":"`+f.frozenID.String()+`","FrozenURL":"`+node.URL+`"}`))
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reference-style request: %s", resp.Status)
	}
	// No body: 400, as the reference answers.
	resp, err = http.Post(admin.URL+"/ingest/handoff/"+f.other.String(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("no body: %s, want 400", resp.Status)
	}

	if err := c.Handoff(ctx, admin.URL, f.pub, req); !errors.Is(err, handoff.ErrAlreadyAssigned) {
		t.Errorf("duplicate handoff: %v, want ErrAlreadyAssigned", err)
	}
	if err := c.Handoff(ctx, admin.URL, peerID(t, "stranger"), req); !errors.Is(err, handoff.ErrUnknownPublisher) {
		t.Errorf("unknown publisher: %v, want ErrUnknownPublisher", err)
	}
	fmu.Lock()
	frozen = true
	fmu.Unlock()
	if err := c.Handoff(ctx, admin.URL, f.other, req); !errors.Is(err, handoff.ErrFrozen) {
		t.Errorf("frozen receiver: %v, want ErrFrozen", err)
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: f.pub, Continued: f.frozenID}})
}

func TestDecodeRequest(t *testing.T) {
	frozen := peerID(t, "frozen")
	ok := `{"FrozenID":"` + frozen.String() + `","FrozenURL":"http://10.0.0.1:3000"}`
	r, err := handoff.DecodeRequest(strings.NewReader(ok))
	if err != nil || r.FrozenID != frozen || r.FrozenURL != "http://10.0.0.1:3000" {
		t.Fatalf("DecodeRequest(%s) = %+v, %v", ok, r, err)
	}
	for name, body := range map[string]string{
		"empty":        "",
		"blank":        " \n",
		"not JSON":     "FrozenID=x",
		"bad ID":       `{"FrozenID":"nope","FrozenURL":"http://x"}`,
		"no URL":       `{"FrozenID":"` + frozen.String() + `"}`,
		"bad URL":      `{"FrozenID":"` + frozen.String() + `","FrozenURL":"http://"}`,
		"oversize":     `{"FrozenID":"` + frozen.String() + `","FrozenURL":"http://x/` + strings.Repeat("a", handoff.MaxRequestSize) + `"}`,
		"wrong fields": `["x"]`,
	} {
		if _, err := handoff.DecodeRequest(strings.NewReader(body)); !errors.Is(err, handoff.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := handoff.DecodeRequest(nil); !errors.Is(err, handoff.ErrInvalidRequest) {
		t.Errorf("nil body: %v", err)
	}
}
