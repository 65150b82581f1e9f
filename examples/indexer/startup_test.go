package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// The binary as a real process: a start-up error ends it with status 1 and
// the cause on stderr (no panic); a client still sending a request body
// at SIGTERM neither holds it past -shutdown-timeout nor makes its exit
// status non-zero.
func TestStartupAndShutdown(t *testing.T) {
	t.Parallel()
	bin := proctest.Build(t, indexerPkg)
	// fails runs the binary with args and checks that it exits 1 with an
	// "indexer: " line holding each of want.
	fails := func(t *testing.T, args []string, want ...string) {
		t.Helper()
		p := proctest.Start(t, bin, args...)
		code := p.Wait(waitTimeout)
		out := p.Output()
		if code != 1 || strings.Contains(out, "panic") {
			t.Fatalf("exit status %d, want 1 without a panic; output:\n%s", code, out)
		}
		var last string
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, "indexer: ") {
				last = l
			}
		}
		for _, w := range want {
			if !strings.Contains(last, w) {
				t.Errorf("error line %q, want %q in it; output:\n%s", last, w, out)
			}
		}
	}
	args := func(dir string, extra ...string) []string {
		return append([]string{"-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
			"-metrics", "", "-p2p", "none"}, extra...)
	}

	t.Run("data dir locked", func(t *testing.T) {
		dir := t.TempDir()
		first := startNode(t, bin, dir)
		fails(t, args(dir), "index store "+filepath.Join(dir, "index"), "locked: is another node running on this -dir?")
		first.stop()
	})
	t.Run("bad key file", func(t *testing.T) {
		dir := t.TempDir()
		key := filepath.Join(dir, indexernode.KeyFile)
		if err := os.WriteFile(key, []byte("garbage\x00\xff"), 0o600); err != nil {
			t.Fatal(err)
		}
		fails(t, args(dir), "identity key "+key)
	})
	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		busy := ln.Addr().String()
		fails(t, args(t.TempDir(), "-admin", busy), "-admin "+busy, "address already in use")
		host, port, _ := net.SplitHostPort(busy)
		p2p := "/ip4/" + host + "/tcp/" + port
		fails(t, args(t.TempDir(), "-p2p", p2p), "libp2p host on "+p2p, "address already in use")
	})
	t.Run("SIGTERM with a slow body", func(t *testing.T) {
		n := startNode(t, bin, t.TempDir(), "-shutdown-timeout", "500ms")
		proctest.SlowBody(t, n.Addr("ingest"), "/announce")
		time.Sleep(200 * time.Millisecond) // the body is being read
		begin := time.Now()
		n.stop() // exit status 0
		if took := time.Since(begin); took > 30*time.Second {
			t.Errorf("stopping took %v with -shutdown-timeout 500ms", took)
		}
		if out := n.Output(); !strings.Contains(out, "ingest server: connections still busy 500ms after shutdown began; closed them") {
			t.Errorf("no forced-shutdown warning in the output:\n%s", out)
		}
	})
}
