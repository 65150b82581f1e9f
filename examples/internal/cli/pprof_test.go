package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// -pprof takes only a loopback address; the profiles answer a program on
// this machine, and neither a web page nor a foreign Host.
func TestPprof(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.0.0.1:0", ":0", "example.com:0"} {
		if ln, err := ListenPprof(addr); err == nil {
			ln.Close()
			t.Errorf("ListenPprof(%q) accepted an address off loopback", addr)
		} else if !strings.HasPrefix(err.Error(), "-pprof "+addr+": ") {
			t.Errorf("ListenPprof(%q) = %v, want an error naming the flag", addr, err)
		}
	}
	ln, err := ListenPprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	eg, gctx := errgroup.WithContext(ctx)
	if err := ServePprof(gctx, eg, ln, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		if err := eg.Wait(); err != nil {
			t.Errorf("pprof server: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/debug/pprof/"
	for _, tc := range []struct {
		name         string
		host, origin string
		want         int
	}{
		{"program", "", "", http.StatusOK},
		{"web page", "", "http://evil.example", http.StatusForbidden},
		{"rebound name", "evil.example", "", http.StatusMisdirectedRequest},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.want)
		}
	}
}
