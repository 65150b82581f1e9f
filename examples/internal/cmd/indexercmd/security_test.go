package indexercmd_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// running is an indexer run in this process.
type running struct {
	admin string // http://127.0.0.1:port
	tap   *logtap.Tap
	stop  func()
}

// runIndexer runs the indexer program with a memory store, every
// listener on 127.0.0.1:0 but those args override, and waits for
// msg=starting.
func runIndexer(t *testing.T, args ...string) running {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	tap := logtap.New(io.Discard)
	done := make(chan error, 1)
	base := []string{"-dir", t.TempDir(), "-store", "memory", "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0",
		"-admin", "127.0.0.1:0", "-metrics", "", "-p2p", "none"}
	go func() {
		done <- indexercmd.Main(ctx, append(base, args...), tap)
		tap.Close()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("indexer: %v", err)
		}
	}
	t.Cleanup(stop)
	addr, err := tap.Addr(ctx, "admin")
	if err == nil {
		_, err = tap.WaitMsg(ctx, "starting")
	}
	if err != nil {
		t.Fatalf("indexer did not start: %v\n%s", err, strings.Join(tap.Lines(), "\n"))
	}
	return running{admin: "http://" + addr, tap: tap, stop: stop}
}

// statusCode GETs /status on the admin API with the bearer token (none
// when "").
func statusCode(t *testing.T, adminURL, token string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, adminURL+"/status", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func newID(t *testing.T) peer.ID {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func writeFile(t *testing.T, data string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// An admin listener beyond loopback without a token: Run refuses to
// start, naming the problem, before it opens or binds anything.
func TestAdminOffLoopbackNeedsToken(t *testing.T) {
	t.Setenv(cli.EnvAdminToken, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "10.9.8.7:3002", "indexer.example:3002"} {
		dir := filepath.Join(t.TempDir(), "data")
		err := indexercmd.Main(deadline.Context(t, time.Minute), []string{"-dir", dir, "-store", "memory", "-admin", addr, "-p2p", "none"}, io.Discard)
		if !errors.Is(err, indexercmd.ErrAdminNeedsToken) {
			t.Fatalf("-admin %s without a token: %v, want ErrAdminNeedsToken", addr, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "-admin "+addr) || !strings.Contains(msg, "-admin-token-file") ||
			!strings.Contains(msg, cli.EnvAdminToken) {
			t.Errorf("error %q does not name the listener and the ways to give a token", msg)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("-admin %s: the data directory was created before the refusal", addr)
		}
	}
	// Two explicit token sources are refused too.
	file := writeFile(t, "tok\n", 0o600)
	err := indexercmd.Main(deadline.Context(t, time.Minute), []string{"-dir", t.TempDir(), "-admin-token", "a", "-admin-token-file", file}, io.Discard)
	if !errors.Is(err, cli.ErrTokenSources) {
		t.Fatalf("-admin-token and -admin-token-file: %v, want ErrTokenSources", err)
	}
}

// The token from a file or from the environment protects the admin API:
// 401 without it or with another, 200 with it.
func TestAdminTokenSources(t *testing.T) {
	const secret = "pool-secret-0123456789"
	file := writeFile(t, secret+"\n", 0o600)
	for _, c := range []struct {
		name string
		env  string
		args []string
	}{
		{"file", "env-is-ignored-when-a-file-is-given", []string{"-admin-token-file", file}},
		{"environment", secret, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(cli.EnvAdminToken, c.env)
			n := runIndexer(t, c.args...)
			for tok, want := range map[string]int{"": 401, "wrong": 401, secret + "x": 401, secret[:5]: 401, secret: 200} {
				if got := statusCode(t, n.admin, tok); got != want {
					t.Errorf("token %q: %d, want %d", tok, got, want)
				}
			}
			// The assigner's client with the token.
			cl, err := admin.NewClient(n.admin, admin.WithClientToken(secret))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Status(t.Context()); err != nil {
				t.Fatalf("client with the token: %v", err)
			}
			cl, _ = admin.NewClient(n.admin)
			if _, err := cl.Status(t.Context()); !errors.Is(err, admin.ErrUnauthorized) {
				t.Fatalf("client without the token: %v, want ErrUnauthorized", err)
			}
			for _, l := range n.tap.Lines() {
				if strings.Contains(l, secret) {
					t.Fatalf("the token is in the log: %s", l)
				}
			}
		})
	}

	// A token file others can read is used, with a WARN.
	t.Setenv(cli.EnvAdminToken, "")
	open := writeFile(t, secret+"\n", 0o644)
	n := runIndexer(t, "-admin-token-file", open)
	if got := statusCode(t, n.admin, secret); got != 200 {
		t.Fatalf("token from a 0644 file: %d", got)
	}
	if _, err := n.tap.WaitMsg(deadline.Context(t, 30*time.Second), "admin token: token file "+open+" has mode -rw-r--r--: others on this machine can read it (chmod 600)"); err != nil {
		t.Fatalf("no WARN about the file's mode: %v\n%s", err, strings.Join(n.tap.Lines(), "\n"))
	}
}

// -handoff-from and -handoff-from-file: a handoff naming another
// FrozenURL is refused (403 unknown-indexer) before the frozen indexer is
// asked; without either, a WARN says any is accepted.
func TestHandoffFrom(t *testing.T) {
	t.Setenv(cli.EnvAdminToken, "")
	var mu sync.Mutex
	var asked []string
	askedNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[]") // lists no provider
	}))
	defer frozen.Close()
	stranger := httptest.NewServer(http.NotFoundHandler())
	defer stranger.Close()
	pub, frozenID := newID(t), newID(t)
	handoffTo := func(n running, frozenURL string) error {
		cl, _ := admin.NewClient(n.admin)
		return cl.Handoff(t.Context(), pub, admin.HandoffRequest{FrozenID: frozenID, FrozenURL: frozenURL})
	}

	urlFile := filepath.Join(t.TempDir(), "pool-indexers")
	if err := os.WriteFile(urlFile, []byte("# the pool\nhttp://127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		join func() // the frozen indexer joins the list
	}{
		{"list", []string{"-handoff-from", "http://127.0.0.1:1, " + strings.ToUpper(frozen.URL[:4]) + frozen.URL[4:] + "/"}, nil},
		{"file", []string{"-handoff-from-file", urlFile}, func() {
			if err := os.WriteFile(urlFile, []byte("http://127.0.0.1:1\n"+frozen.URL+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			n := runIndexer(t, append([]string{"-use-assigner", "-allow-private-addrs"}, c.args...)...) // the frozen indexers are on loopback
			if err := handoffTo(n, stranger.URL); !errors.Is(err, admin.ErrUnknownIndexer) {
				t.Fatalf("handoff from an indexer not listed: %v, want ErrUnknownIndexer", err)
			}
			if c.join != nil {
				if err := handoffTo(n, frozen.URL); !errors.Is(err, admin.ErrUnknownIndexer) {
					t.Fatalf("before joining: %v, want ErrUnknownIndexer", err)
				}
				c.join()
			}
			if a := askedNow(); len(a) != 0 {
				t.Fatalf("the frozen indexer was asked %v before the check", a)
			}
			// Listed: past the check, the frozen indexer is asked (and
			// lists nothing for the publisher).
			if err := handoffTo(n, frozen.URL); !errors.Is(err, admin.ErrUnknownPublisher) {
				t.Fatalf("handoff from a listed indexer: %v, want ErrUnknownPublisher from its empty list", err)
			}
			if a := askedNow(); len(a) != 1 || a[0] != "/providers" {
				t.Fatalf("frozen indexer asked %v", a)
			}
			for _, l := range n.tap.Lines() {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "handoffs are accepted from any") {
					t.Fatalf("WARN about any frozen indexer with %v: %s", c.args, l)
				}
			}
		})
	}

	n := runIndexer(t, "-use-assigner")
	if _, err := n.tap.WaitMsg(deadline.Context(t, 30*time.Second), "handoffs are accepted from any frozen indexer the admin caller names (FrozenURL); "+
		"set -handoff-from or -handoff-from-file to the pool's find URLs"); err != nil {
		t.Fatalf("no WARN without -handoff-from: %v", err)
	}
	for _, args := range [][]string{
		{"-handoff-from", "x", "-handoff-from-file", urlFile},
		{"-handoff-from", " , "},
		{"-handoff-from-file", filepath.Join(t.TempDir(), "missing")},
		{"-handoff-from", "ftp://127.0.0.1/x"},
	} {
		err := indexercmd.Main(deadline.Context(t, time.Minute), append([]string{"-dir", t.TempDir(), "-store", "memory", "-p2p", "none",
			"-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-metrics", ""}, args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "handoff") {
			t.Errorf("%q: %v, want an error naming the handoff flag", args, err)
		}
	}
}
