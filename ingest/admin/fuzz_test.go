package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/libp2p/go-libp2p/core/peer"
)

// FuzzHandoffBody feeds arbitrary handoff bodies to the handler: it answers
// 200, 400 or 413 and never panics, and a 200 hands the Node a valid
// request.
func FuzzHandoffBody(f *testing.F) {
	frozen := testID(f, 4).String()
	for _, s := range []string{
		`{"FrozenID":"` + frozen + `","FrozenURL":"http://127.0.0.1:3000"}`,
		`{"frozenid":"` + frozen + `","frozenurl":"https://a.example/x"}`,
		`{"FrozenID":"` + frozen + `","FrozenURL":"indexer:3000"}`,
		`{"FrozenID":"","FrozenURL":""}`,
		`{"FrozenID":1}`, `null`, `[]`, `""`, ``, `{`, "\x00\xff",
	} {
		f.Add([]byte(s))
	}
	pub := testID(f, 2)
	f.Fuzz(func(t *testing.T, body []byte) {
		node := newFakeNode(testID(t, 1))
		h := newHandler(t, node, admin.WithMaxRequestBody(1024))
		w := do(t, h, "POST", "/ingest/handoff/"+pub.String(), strings.NewReader(string(body)), nil)
		switch w.Code {
		case http.StatusOK:
			if len(node.handoffs) != 1 {
				t.Fatalf("200 without a handoff")
			}
			req := node.handoffs[0]
			if err := req.FrozenID.Validate(); err != nil {
				t.Fatalf("handed an invalid FrozenID: %v", err)
			}
			u, err := url.Parse(req.FrozenURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("handed a bad FrozenURL %q", req.FrozenURL)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if len(node.Calls()) != 0 {
				t.Fatalf("%d but the node was called", w.Code)
			}
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// FuzzPeerIDPath feeds arbitrary path segments where a publisher ID goes:
// the handler answers 200 with the ID the segment decodes to, or 400
// naming it, and never panics.
func FuzzPeerIDPath(f *testing.F) {
	for _, s := range []string{
		testID(f, 2).String(),
		"12D3KooWBUNzpAz1Jfvnaag1nHBi6gbG5Q1BQm8kCfcpmt7bGKa6",
		"QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
		"bafzaajaiaejcbzrv4ajq2ewtgmivbp3awapgqtoiyprpiacqyabm7uhyf6loukaj",
		"", "nope", "a/b", "..", "%2F", "\x00", strings.Repeat("1", 300),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		node := newFakeNode(testID(t, 1))
		h := newHandler(t, node)
		r := &http.Request{
			Method: http.MethodPost,
			Host:   admin.DefaultListenAddr,
			URL:    &url.URL{Path: "/ingest/assign/" + seg},
			Header: http.Header{},
			Body:   http.NoBody,
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(t.Context()))
		switch w.Code {
		case http.StatusOK:
			want, err := peer.Decode(seg)
			if err != nil {
				t.Fatalf("200 for %q, which does not decode: %v", seg, err)
			}
			if calls := node.Calls(); len(calls) != 1 || calls[0] != "Assign "+want.String() {
				t.Fatalf("calls %q for %q", calls, seg)
			}
		case http.StatusBadRequest:
			if len(node.Calls()) != 0 {
				t.Fatalf("400 but the node was called")
			}
			if seg != "" && !strings.Contains(w.Body.String(), "bad peer id") {
				t.Fatalf("400 body %q does not name the bad peer id", w.Body)
			}
		default:
			t.Fatalf("status %d for %q", w.Code, seg)
		}
	})
}
