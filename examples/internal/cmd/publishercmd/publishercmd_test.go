package publishercmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/publishercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/deadline"
)

// Main logs one msg=listening line per publisher, then its identity, then
// msg=starting; each publisher serves its truth on the address logged,
// and a cancel stops Main cleanly.
func TestMainServes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	tap := logtap.New(io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- publishercmd.Main(rctx, []string{"-listen", "127.0.0.1:0", "-publishers", "2", "-seed", "5",
			"-interval", "20ms", "-max-ads", "3", "-entries", "4", "-chunk-size", "2"}, tap)
		tap.Close()
	}()
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		stop()
		t.Fatalf("Main did not start: %v (Main: %v)\n%s", err, <-done, strings.Join(tap.Lines(), "\n"))
	}
	for i, name := range []string{"publisher-0", "publisher-1"} {
		addr, err := tap.Addr(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/truth")
		if err != nil {
			t.Fatal(err)
		}
		var tr publishernode.Truth
		err = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		ref, err := publishernode.NewPublisher(publishernode.Spec{Seed: publishernode.PublisherSeed(5, i), Ads: 1, Entries: 4, ChunkSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Publisher != ref.ID().String() {
			t.Errorf("%s serves publisher %s, want %s (seed 5, index %d)", name, tr.Publisher, ref.ID(), i)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Main: %v", err)
	}
}

// Main's start-up errors name the flag at fault; -h is flag.ErrHelp; a
// -dir whose state was written with another seed is ErrState.
func TestMainErrors(t *testing.T) {
	dir := t.TempDir()
	// The state file of a node run with the defaults (seed 1) at 3 ads.
	st := `{"Seed":1,"Entries":100,"ChunkSize":100,"RemoveEvery":10,"UpdateEvery":7,"Fault":"","Ads":[3]}`
	if err := os.WriteFile(filepath.Join(dir, publishernode.StateFile), []byte(st), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		args []string
		want error
		text string
	}{
		{[]string{"-h"}, flag.ErrHelp, ""},
		{[]string{"-listen", busy}, nil, "-listen: publisher-0: listen tcp " + busy + ": bind: address already in use"},
		{[]string{"-max-conns-per-ip", "-1"}, nil, "-max-conns-per-ip -1 must not be negative"},
		{[]string{"-fault", "lies"}, nil, "unknown fault \"lies\""}, // the flag package does not wrap
		{[]string{"-publishers", "0"}, nil, "-publishers 0"},
		{[]string{"-listen", "127.0.0.1"}, nil, "-listen"},
		{[]string{"-listen", "127.0.0.1:0", "-dir", dir, "-seed", "2"}, publishernode.ErrState, "seed 1"},
		{[]string{"-listen", "127.0.0.1:0", "-dir", dir, "-piece-context-every", "3"}, publishernode.ErrState, "piece-context-every 0"},
		{[]string{"-piece-context-every", "-1"}, nil, "-piece-context-every -1"},
	} {
		err := publishercmd.Main(deadline.Context(t, time.Minute), tc.args, io.Discard)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("Main %q: %v, want %v containing %q", tc.args, err, tc.want, tc.text)
		}
	}
}

// LoadConfig maps the flags onto the typed Config, over the -config file.
func TestLoadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "publisher.json")
	if err := os.WriteFile(file, []byte(`{"Publishers": 3, "Seed": 9, "Interval": "250ms", "Fault": "huge"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := publishercmd.LoadConfig([]string{"-config", file, "-seed", "11", "-announce", "http://a,http://b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := publishernode.DefaultConfig()
	want.Publishers, want.Seed, want.Interval, want.Fault = 3, 11, 250*time.Millisecond, publishernode.HugeChunks
	want.Announce = []string{"http://a", "http://b"}
	if got, _ := json.Marshal(cfg); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("LoadConfig = %s, want %s", got, must(json.Marshal(want)))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
