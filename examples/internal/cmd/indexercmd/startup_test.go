package indexercmd_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cmd/indexercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// runFails runs the indexer program in this process with args, expects it
// to fail at start, and returns its error and what it logged. A panic
// fails the test.
func runFails(t *testing.T, args ...string) (error, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Run panicked: %v\n%s", p, stderr.String())
			}
		}()
		return indexercmd.Main(ctx, args, &stderr)
	}()
	if err == nil {
		t.Fatalf("Run(%q) = nil, want a start-up error\n%s", args, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("Run(%q) returned only at its deadline: %v", args, err)
	}
	t.Logf("Run: %v", err)
	return err, stderr.String()
}

// loopbackArgs are the listener flags of an indexer on free loopback
// ports, without libp2p or metrics.
func loopbackArgs(dir string) []string {
	return []string{"-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-metrics", "", "-p2p", "none"}
}

// busyPort returns a loopback address whose port a listener of the test
// holds.
func busyPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

func TestStartDataDirLocked(t *testing.T) {
	for _, store := range []string{"pebble", "leveldb", "memory"} {
		t.Run(store, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := t.TempDir()
			_, stop := startIndexer(ctx, t, dir, "-store", store)
			defer stop()
			err, _ := runFails(t, append(loopbackArgs(dir), "-store", store)...)
			// pebble: "lock held by current process"; LevelDB: EAGAIN.
			if msg := err.Error(); !strings.Contains(msg, "lock") && !strings.Contains(msg, "resource temporarily unavailable") {
				t.Errorf("second instance on the same -dir: %v, want the lock named", err)
			}
		})
	}
}

func TestStartBadKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, indexernode.KeyFile)
	if err := os.WriteFile(key, []byte("not a protobuf key \x00\xff\x13"), 0o600); err != nil {
		t.Fatal(err)
	}
	err, _ := runFails(t, loopbackArgs(dir)...)
	if !strings.Contains(err.Error(), "identity key "+key) {
		t.Errorf("bad key file: %v, want it named", err)
	}
}

func TestStartPortInUse(t *testing.T) {
	for _, name := range []string{"find", "ingest", "admin", "metrics", "p2p"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			busy := busyPort(t)
			value := busy
			if name == "p2p" {
				host, port, _ := net.SplitHostPort(busy)
				value = "/ip4/" + host + "/tcp/" + port
			}
			err, _ := runFails(t, append(loopbackArgs(dir), "-"+name, value)...)
			want := "-" + name + " " + busy
			if name == "p2p" {
				want = "libp2p host on " + value
			}
			if msg := err.Error(); !strings.Contains(msg, want) || (name != "p2p" && !strings.Contains(msg, "address already in use")) {
				t.Errorf("-%s on a busy port: %v, want %q and the cause", name, err, want)
			}
			// The failed start released the data directory.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, stop := startIndexer(ctx, t, dir)
			stop()
		})
	}
}

// -pprof serves the profiles on loopback only: an address off loopback
// stops the node at start.
func TestPprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		err, _ := runFails(t, append(loopbackArgs(t.TempDir()), "-pprof", addr)...)
		if !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("-pprof %s: %v, want not a loopback address", addr, err)
		}
	}
}

// The pprof listener has no token: like the admin API without one, it
// answers no web page and no rebound name, or a page's no-cors GET of
// /debug/pprof/profile would cost the node a CPU profile.
func TestPprofAnswersNoPage(t *testing.T) {
	r := runIndexer(t, "-pprof", "127.0.0.1:0")
	addr, err := r.tap.Addr(deadline.Context(t, 30*time.Second), "pprof")
	if err != nil {
		t.Fatal(err)
	}
	get := func(host string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("", nil); code != http.StatusOK {
		t.Fatalf("pprof from a program on this host: %d, want 200", code)
	}
	if code := get("rebind.evil.example:80", nil); code != http.StatusMisdirectedRequest {
		t.Errorf("pprof under a rebound name: %d, want 421", code)
	}
	if code := get("", map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("pprof from a web page: %d, want 403", code)
	}
}

type indexerURLs struct{ find, ingest, admin string }

// startIndexer runs the indexer program in this process on dir, with
// free ports, and returns its URLs and a function that stops it.
func startIndexer(ctx context.Context, t *testing.T, dir string, extra ...string) (indexerURLs, func()) {
	t.Helper()
	rctx, cancel := context.WithCancel(ctx)
	var w io.Writer = io.Discard
	if f := os.Getenv("DEBUGLOG"); f != "" {
		w, _ = os.Create(f)
	}
	tap := logtap.New(w)
	done := make(chan error, 1)
	go func() {
		args := []string{"-dir", dir, "-store", "pebble", "-find", "127.0.0.1:0",
			"-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-metrics", "", "-p2p", "none",
			"-allow-private-addrs"} // the test's publishers are on loopback
		done <- indexercmd.Main(rctx, append(args, extra...), tap)
		tap.Close()
	}()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("indexer: %v", err)
		}
	}
	var urls indexerURLs
	for _, l := range []struct {
		name string
		to   *string
	}{{"find", &urls.find}, {"ingest", &urls.ingest}, {"admin", &urls.admin}} {
		a, err := tap.Addr(ctx, l.name)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		*l.to = "http://" + a
	}
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		stop()
		t.Fatal(err)
	}
	return urls, stop
}
