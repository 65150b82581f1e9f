package localonly_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/internal/localonly"
)

func TestCheck(t *testing.T) {
	g, err := localonly.New("the admin API", "set -admin-hosts NAME or a token to allow it", "Indexer.Internal.", "[fd00::1]", "10.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host   string
		header [2]string // name, value
		want   error     // nil: let through
	}{
		{host: "127.0.0.1:3002"},
		{host: "127.0.0.1"},
		{host: "127.9.8.7:1"},
		{host: "[::1]:3002"},
		{host: "[::1]"},
		{host: "[::ffff:127.0.0.1]:3002"},
		{host: "localhost:3002"},
		{host: "LOCALHOST."},
		{host: "indexer.internal:3002"},
		{host: "indexer.internal"},
		{host: "[fd00::1]:80"},
		{host: "10.0.0.5:3002"},
		{host: "127.0.0.1:3002", header: [2]string{"Sec-Fetch-Site", "none"}},
		{host: "rebind.evil.example:3002", want: localonly.ErrForeignHost},
		{host: "127.0.0.1.evil.example", want: localonly.ErrForeignHost},
		{host: "localhost.evil.example:3002", want: localonly.ErrForeignHost},
		{host: "evil.localhost:3002", want: localonly.ErrForeignHost},
		{host: "0.0.0.0:3002", want: localonly.ErrForeignHost},
		{host: "[::]:3002", want: localonly.ErrForeignHost},
		{host: "10.0.0.6:3002", want: localonly.ErrForeignHost},
		{host: "", want: localonly.ErrForeignHost},
		{host: "127.0.0.1:3002", header: [2]string{"Origin", "http://127.0.0.2:8080"}, want: localonly.ErrBrowser},
		{host: "127.0.0.1:3002", header: [2]string{"Origin", "null"}, want: localonly.ErrBrowser},
		{host: "127.0.0.1:3002", header: [2]string{"Origin", "http://127.0.0.1:3002"}, want: localonly.ErrBrowser},
		{host: "127.0.0.1:3002", header: [2]string{"Sec-Fetch-Site", "cross-site"}, want: localonly.ErrBrowser},
		{host: "127.0.0.1:3002", header: [2]string{"Sec-Fetch-Site", "same-site"}, want: localonly.ErrBrowser},
		// The Host is checked first.
		{host: "rebind.evil.example:3002", header: [2]string{"Origin", "http://rebind.evil.example:3002"}, want: localonly.ErrForeignHost},
	} {
		r := httptest.NewRequest(http.MethodPut, "/freeze", nil)
		r.Host = tc.host
		if tc.header[0] != "" {
			r.Header.Set(tc.header[0], tc.header[1])
		}
		err := g.Check(r)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Host %q %s: %v, want %v", tc.host, tc.header, err, tc.want)
			continue
		}
		if err == nil {
			continue
		}
		var ref *localonly.Refusal
		if !errors.As(err, &ref) {
			t.Fatalf("%T is not a *Refusal", err)
		}
		wantStatus := http.StatusForbidden
		if tc.want == localonly.ErrForeignHost {
			wantStatus = http.StatusMisdirectedRequest
		}
		if ref.Status != wantStatus || !strings.Contains(ref.Reason, "the admin API") {
			t.Errorf("Host %q %s: status %d %q, want %d naming the API", tc.host, tc.header, ref.Status, ref.Reason, wantStatus)
		}
	}
}

// The refusal of a foreign Host names the Host, what is accepted and the
// way out; the refusal of a page names its Origin.
func TestHandlerAnswers(t *testing.T) {
	g, err := localonly.New("the admin API", "set -admin-hosts NAME or a token to allow it")
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	srv := httptest.NewServer(g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })))
	defer srv.Close()
	do := func(host, origin string) (int, string) {
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/freeze", nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	code, body := do("rebind.evil.example:1234", "")
	if want := "Host rebind.evil.example:1234 is not a loopback address: the admin API has no token set, so it answers only requests to 127.0.0.0/8, [::1] or localhost; set -admin-hosts NAME or a token to allow it"; code != http.StatusMisdirectedRequest || body != want {
		t.Errorf("foreign Host: %d %q\nwant 421 %q", code, body, want)
	}
	code, body = do("", "http://127.0.0.2:8080")
	if code != http.StatusForbidden || !strings.Contains(body, "Origin http://127.0.0.2:8080") {
		t.Errorf("Origin: %d %q, want 403 naming the Origin", code, body)
	}
	if code, body = do("", ""); code != http.StatusOK || served != 1 {
		t.Errorf("plain request: %d %q, served %d times; want 200 once", code, body, served)
	}
}

func TestNewRefusesBadNames(t *testing.T) {
	for _, h := range []string{"", " ", "indexer:3002", "http://indexer", "indexer/x", "*.internal", "[fd00::1]:80", "[indexer]"} {
		if _, err := localonly.New("the admin API", "", h); err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("New(%q): %v, want an error naming it", h, err)
		}
	}
}

func TestNilGuard(t *testing.T) {
	var g *localonly.Guard
	r := httptest.NewRequest(http.MethodPut, "/freeze", nil)
	r.Host = "rebind.evil.example"
	r.Header.Set("Origin", "http://evil.example")
	if err := g.Check(r); err != nil {
		t.Fatalf("nil guard: %v", err)
	}
}
