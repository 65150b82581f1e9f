package handoff_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/store/memory"
)

// adminHandler is the thinnest admin API an indexer could mount for
// POST /ingest/handoff/{id}: decode, hand off, answer errors as
// ingest/admin's handler does (writeAdminError).
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

// writeAdminError answers err as the ingest/admin wire contract says:
// a sentinel's status, Indexkit-Error code and fixed body (for an upstream
// failure, the error's text), or 500 with the error's text. (This
// package's tests may not import assigner, but for the admin contract
// the package itself imports.)
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
		{admin.ErrUpstream, 502, "upstream", err.Error()},
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

// TestReceiverAdminRoundTrip: a reference-style request without
// Content-Type is accepted through an admin handler that answers as
// ingest/admin does, and a request without body gets 400.
func TestReceiverAdminRoundTrip(t *testing.T) {
	f := newFixture(t)
	node := newFrozenNode(t, f.recs...)
	st := memory.New()
	defer st.Close()
	r := newReceiver(t, st, f.ingest(), newMapDS())
	admin := httptest.NewServer(adminHandler(r))
	defer admin.Close()

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
