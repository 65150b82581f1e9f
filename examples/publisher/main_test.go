package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// TestBinary runs the command as a process: it serves a truth that grows
// to -max-ads, and stops cleanly on SIGTERM.
func TestBinary(t *testing.T) {
	bin := proctest.Build(t, "./examples/publisher")
	p := proctest.Start(t, bin, "-listen", "127.0.0.1:0", "-interval", "20ms", "-max-ads", "4", "-seed", "3")
	f := p.WaitMsg("publisher")
	url := "http://" + p.Addr("publisher-0") + "/truth"
	var tr publishernode.Truth
	deadline := time.Now().Add(proctest.DefaultTimeout)
	for tr.Ads != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("truth did not reach 4 ads: %+v", tr)
		}
		time.Sleep(20 * time.Millisecond)
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if tr.Publisher != f["publisher"] || tr.Multihashes == 0 || tr.Head == "" {
		t.Fatalf("truth %+v; logged publisher %s", tr, f["publisher"])
	}
	if code := p.Stop(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}

	// A busy port ends it with status 1 and the cause on stderr.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	p = proctest.Start(t, bin, "-listen", busy)
	if code := p.Wait(proctest.DefaultTimeout); code != 1 {
		t.Fatalf("busy port: exit code %d, want 1\n%s", code, p.Output())
	}
	want := "publisher: -listen: publisher-0: listen tcp " + busy + ": bind: address already in use"
	if out := p.Output(); !strings.Contains(out, want) || strings.Contains(out, "panic") {
		t.Errorf("busy port: output does not say %q, or panics:\n%s", want, out)
	}
}
