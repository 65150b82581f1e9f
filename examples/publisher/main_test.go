package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/publishernode"
	"github.com/indexkit/indexkit/internal/proctest"
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
}
