package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// The binary as a real process: a busy port ends it with status 1 and the
// cause on stderr; a client still sending an announce body at SIGTERM
// neither holds it past -shutdown-timeout nor makes it exit non-zero.
func TestStartupAndShutdown(t *testing.T) {
	t.Parallel()
	bin := binary(t, assignerPkg)
	args := func(extra ...string) []string {
		return append([]string{"-indexer", "admin=http://127.0.0.1:1,find=http://127.0.0.1:2,ingest=http://127.0.0.1:3",
			"-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0", "-metrics", "", "-poll-interval", "1h"}, extra...)
	}

	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		busy := ln.Addr().String()
		p := proctest.Start(t, bin, args("-state-listen", busy)...)
		if code := p.Wait(proctest.DefaultTimeout); code != 1 {
			t.Fatalf("exit status %d, want 1; output:\n%s", code, p.Output())
		}
		want := "assigner: -state-listen " + busy + ": listen tcp " + busy + ": bind: address already in use"
		if out := p.Output(); !strings.Contains(out, want) || strings.Contains(out, "panic") {
			t.Errorf("output lacks %q, or panics:\n%s", want, out)
		}
	})
	t.Run("SIGTERM with a slow body", func(t *testing.T) {
		p := proctest.Start(t, bin, args("-shutdown-timeout", "500ms")...)
		p.WaitMsg("starting")
		proctest.SlowBody(t, p.Addr("announce"), "/announce")
		time.Sleep(200 * time.Millisecond) // the body is being read
		if code := p.Stop(); code != 0 {
			t.Fatalf("exit status %d after SIGTERM, want 0; output:\n%s", code, p.Output())
		}
		if out := p.Output(); !strings.Contains(out, "announce server: connections still busy 500ms after shutdown began; closed them") {
			t.Errorf("no forced-shutdown warning in the output:\n%s", out)
		}
	})
}
