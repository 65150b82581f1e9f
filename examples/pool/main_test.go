package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

// tinyPool are the flags of a small, quick pool: one publisher, one
// indexer on the memory store, no freeze.
func tinyPool(dir string) []string {
	return []string{"--refresh", "1s", "--publishers", "1", "--indexers", "1",
		"--store", "memory", "--entries", "5", "--interval", "200ms", "--freeze-budget", "0", "--dir", dir}
}

// TestRun runs the demo briefly in goroutines on the memory store, with
// the default budget of indexer-0 off, and checks its output.
func TestRun(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	var out, errOut bytes.Buffer
	err := run(context.Background(), nil, append([]string{"--duration", "4s"}, tinyPool(t.TempDir())...), &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	for _, want := range []string{"the pool is up; open its page in a browser", "/#q=bafk", "/routing/v1/providers/bafk", "/status.json", "/multihash/", "/sample/", "?seed=demo", "piece sample", "INDEXER", "indexer-0  active", "publisher-0", "── summary after",
		"publishers halted; waiting up to 30s (1ms a multihash + 100ms an ad to walk, raised to --check-min)",
		"every multihash of their truth through the front end: complete after"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunSharded runs the sharded demo briefly: the banner says it is
// sharded and lists the query nodes' find URLs, and the probes name the
// query nodes that hold each key.
func TestRunSharded(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	var out, errOut bytes.Buffer
	args := append([]string{"--duration", "5s", "--sharded", "--query-nodes", "3", "--join-after", "0"}, tinyPool(t.TempDir())...)
	if err := run(context.Background(), nil, args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	for _, want := range []string{"sharded: the indexer is an ingest node (no index of their own); the index lives on 3 query nodes, 2 owners per multihash:",
		"/multihash/<multihash>   # query-0's find API", "query-1's find API", "query-2's find API", "held by query-"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "held by none") {
		t.Errorf("a probe found its key held by none:\n%s", out.String())
	}
}

// The end check of a pool whose only indexer is down cannot complete: it
// waits for its bound, says so, names the indexer down and a few failing
// multihashes, and the program's exit status is exitIncomplete.
func TestSummaryIncomplete(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := parseFlags([]string{"--check-timeout", "2s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := localpool.Start(ctx, localpool.Config{Dir: t.TempDir(), Publishers: 1, Indexers: 1, Store: "memory",
		Entries: 5, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.WaitComplete(ctx); err != nil { // the pool works...
		t.Fatal(err)
	}
	if err := p.Stop(localpool.IndexerName(0)); err != nil { // ...until its only indexer stops
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = summary(p, &out, o, nil, time.Second, publishernode.Piece{}, false)
	if !errors.Is(err, errIncomplete) {
		t.Fatalf("summary: %v, want errIncomplete\n%s", err, out.String())
	}
	t.Logf("summary:\n%s", out.String())
	for _, want := range []string{"waiting up to 2s (--check-timeout)", "INCOMPLETE after 2", "(the bound passed)",
		"why: indexer-0 is down", "failing multihashes (a few):"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "<nil>") {
		t.Errorf("output holds a <nil>:\n%s", out.String())
	}
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != exitIncomplete || !strings.Contains(stderr.String(), "pool: the pool did not answer every multihash") {
		t.Errorf("exit code %d, stderr %q; want %d and the error", code, stderr.String(), exitIncomplete)
	}
}

// The end check of a pool whose lookups all time out (a per-lookup
// timeout no answer can meet, as on an overloaded machine) names the
// timeouts as the cause, says no answer was wrong, and does not blame the
// frozen indexer-0.
func TestSummaryTimeouts(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := parseFlags([]string{"--check-timeout", "2s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := localpool.Start(ctx, localpool.Config{Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "memory",
		Entries: 5, Interval: 200 * time.Millisecond, FreezeBudget: 1, PollInterval: 200 * time.Millisecond,
		LookupTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.WaitFor(ctx, "indexer-0 frozen", func(s *localpool.Snapshot) bool {
		ix := s.Indexer(localpool.IndexerName(0))
		return ix != nil && ix.Frozen
	}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = summary(p, &out, o, nil, time.Second, publishernode.Piece{}, false)
	if !errors.Is(err, errIncomplete) {
		t.Fatalf("summary: %v, want errIncomplete\n%s", err, out.String())
	}
	t.Logf("summary:\n%s", out.String())
	for _, want := range []string{"INCOMPLETE after 2", "lookups got no answer in time (each try retried until the bound): the front end answered slowly",
		"no answer came, and none was wrong"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "frozen") {
		t.Errorf("the end check blames the frozen indexer for timeouts:\n%s", out.String())
	}
	if !strings.Contains(err.Error(), "lookups got no answer in time, none was answered wrong") {
		t.Errorf("error %q does not name the timeouts", err)
	}
}

// The built binary, stopped by SIGINT once the pool shows, checks it,
// finds it complete and exits 0; with an end check bounded below what any
// check takes, it exits exitIncomplete and says why.
func TestBinaryExitStatus(t *testing.T) {
	lane.Integration(t, "builds and runs the binary")
	bin := proctest.Build(t, "./examples/pool")
	t.Run("interrupted and complete", func(t *testing.T) {
		p := proctest.Start(t, bin, tinyPool(t.TempDir())...)
		from := 0
		p.WaitLine(&from, `^── \d+s ── assigner up`, proctest.DefaultTimeout)
		p.Signal(syscall.SIGINT)
		if code := p.Wait(2 * time.Minute); code != 0 {
			t.Errorf("exit status %d after SIGINT, want 0; output:\n%s", code, p.Output())
		}
		if !strings.Contains(p.Output(), "complete after") {
			t.Errorf("no complete end check in the output:\n%s", p.Output())
		}
	})
	t.Run("incomplete", func(t *testing.T) {
		p := proctest.Start(t, bin, append([]string{"--duration", "3s", "--check-timeout", "1ns"}, tinyPool(t.TempDir())...)...)
		if code := p.Wait(2 * time.Minute); code != exitIncomplete {
			t.Errorf("exit status %d, want %d; output:\n%s", code, exitIncomplete, p.Output())
		}
		for _, want := range []string{"waiting up to 1ns (--check-timeout)", "INCOMPLETE after", "pool: the pool did not answer every multihash"} {
			if !strings.Contains(p.Output(), want) {
				t.Errorf("output lacks %q:\n%s", want, p.Output())
			}
		}
	})
}

// TestLookupLasts: the CID the banner prints is answered at the end of a
// run long enough (fast ads) that the old choice, the first multihash of
// publisher-0's first ad, has been removed by then: the front end's
// Routing V1 answer names the publisher the banner names, and the
// publisher's truth still holds the multihash with the values it had.
func TestLookupLasts(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := parseFlags([]string{"--duration", "4s", "--interval", "20ms"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := localpool.Start(ctx, localpool.Config{Dir: t.TempDir(), Publishers: 2, Indexers: 1, Store: "memory",
		Entries: 5, Interval: o.interval})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	look := pickLookup(ctx, p, lookupHorizon(o))
	if !look.cid.Defined() {
		t.Fatal("no lookup picked")
	}
	var banner bytes.Buffer
	printURLs(&banner, p.URLs(), look, true, "token", 0)
	if want := fmt.Sprintf("publisher-%d's ad %d, which it keeps for the whole run", look.publisher, look.ad); !strings.Contains(banner.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, banner.String())
	}
	// The old choice: publisher-0's first multihash at its first ad.
	spec, err := p.PublisherSpec(localpool.RolePublishers, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	first, err := publishernode.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	old := first.Truth(true).Entries[0].Multihash

	time.Sleep(o.duration)
	if err := p.HaltPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := p.WaitComplete(ctx); err != nil {
		t.Fatalf("pool incomplete: %v (%v)", err, c)
	}
	truth, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(truth.Removed, old) {
		t.Fatalf("the old choice %s is not removed after %d ads: the run is too short to test anything", old, truth.Publishers[0].Ads)
	}
	holder := truth.Publishers[look.publisher]
	if holder.Ads > look.horizon {
		t.Fatalf("publisher-%d has %d ads, past the horizon %d", look.publisher, holder.Ads, look.horizon)
	}
	mh := look.cid.Hash().B58String()
	if !slices.ContainsFunc(truth.Entries, func(e publishernode.Entry) bool { return e.Multihash == mh }) {
		t.Fatalf("%s (%s) is not in the truth at the end (%d ads)", look.cid, mh, holder.Ads)
	}
	resp, err := http.Get(p.URLs().Find + "/routing/v1/providers/" + look.cid.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), holder.Publisher) {
		t.Fatalf("GET /routing/v1/providers/%s at the end: %s %s; want publisher-%d (%s)", look.cid, resp.Status, body, look.publisher, holder.Publisher)
	}
	t.Logf("%s of publisher-%d's ad %d answered after %d ads; the old choice was removed", look.cid, look.publisher, look.ad, holder.Ads)
}
