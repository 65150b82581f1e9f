package indexernode_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
)

// A handoff that fails because the frozen indexer failed (an error
// status, an answer that is not its JSON, no answer at all) is answered
// 502 Bad Gateway, code "upstream", by a real node's admin API, with a
// body that names the failure and quotes nothing the frozen indexer
// wrote; the caller's own mistake stays 400.
func TestHandoffUpstreamFailure(t *testing.T) {
	const marker = "MARKER-frozen-indexer-page"
	r := runIndexer(t, useAssigner, allowPrivate)
	status := http.StatusServiceUnavailable
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html>\n<title>%s</title>\n</html>\n", marker)
	}))
	defer frozen.Close()
	// A port that refuses connections: bound, then closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	c, err := admin.NewClient(r.admin)
	if err != nil {
		t.Fatal(err)
	}
	pub, frozenID := newID(t), newID(t)
	for _, tc := range []struct {
		name   string
		status int // the frozen indexer's
		url    string
	}{
		{"frozen indexer answers 503", http.StatusServiceUnavailable, frozen.URL},
		{"frozen indexer answers an HTML page with 200", http.StatusOK, frozen.URL},
		{"frozen indexer unreachable", 0, closed},
	} {
		status = tc.status
		err := c.Handoff(t.Context(), pub, admin.HandoffRequest{FrozenID: frozenID, FrozenURL: tc.url})
		se, ok := errors.AsType[*admin.StatusError](err)
		if !ok || se.Code != http.StatusBadGateway || !errors.Is(err, admin.ErrUpstream) {
			t.Errorf("%s: %v, want 502 and admin.ErrUpstream", tc.name, err)
			continue
		}
		if !strings.Contains(se.Body, tc.url) || strings.Contains(se.Body, marker) || strings.Contains(se.Body, "'<'") {
			t.Errorf("%s: body %q, want the frozen indexer's URL named and nothing it wrote", tc.name, se.Body)
		}
	}
	// The client refuses a bad FrozenURL itself: sent raw, it is 400.
	resp, err := http.Post(r.admin+"/ingest/handoff/"+pub.String(), "application/json",
		strings.NewReader(`{"FrozenID":"`+frozenID.String()+`","FrozenURL":"ftp://frozen.example/"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad FrozenURL: %s, want 400", resp.Status)
	}
}
