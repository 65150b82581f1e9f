package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
)

const waitTimeout = 30 * time.Second

type node struct {
	*proctest.Proc
	find, ingest, admin string
}

func startIndexer(t *testing.T, bin string) *node {
	t.Helper()
	p := proctest.Start(t, bin, "-dir", t.TempDir(), "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0",
		"-admin", "127.0.0.1:0", "-metrics", "", "-p2p", "none", "-use-assigner", "-allow-private-addrs", "-log-level", "debug")
	p.WaitMsg("starting")
	return &node{Proc: p, find: "http://" + p.Addr("find"), ingest: "http://" + p.Addr("ingest"), admin: "http://" + p.Addr("admin")}
}

// lastHead is the head of the last finished walk of the node's only
// publisher, or cid.Undef.
func (n *node) lastHead(t *testing.T) cid.Cid {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := admin.NewClient(n.admin)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.IngestStatus(ctx)
	if err != nil || len(st) != 1 {
		return cid.Undef
	}
	return st[0].LastHead
}

func (n *node) status(t *testing.T) admin.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _ := admin.NewClient(n.admin)
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getJSONWhenRunning is getJSON that reports false on the state API's 503
// "service not running": the binary logs msg=starting just before its
// service's Run begins, so the first requests can come too early.
func getJSONWhenRunning(t *testing.T, url string, v any) bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), assigner.ErrNotRunning.Error()):
		return false
	case resp.StatusCode != http.StatusOK:
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
	return true
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
}

// TestPool runs three indexer nodes in assigner mode and the assigner
// over them (replication 2): a publisher's announce to the assigner gets
// it assigned to two nodes, which both ingest its chain; one of them
// freezes, and its publisher is handed off to the third node, which
// continues the chain.
func TestPool(t *testing.T) {
	chain, err := chaingen.Generate(chaingen.Config{Seed: 11, Ads: 12, MhsPerAd: 10, ChunkSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), chain.Head()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	h, port, _ := strings.Cut(hostPort, ":")
	pubAddr := multiaddr.StringCast("/ip4/" + h + "/tcp/" + port + "/http/p2p/" + chain.Publisher.String())

	indexerBin := binary(t, indexerPkg)
	assignerBin := binary(t, assignerPkg)
	nodes := []*node{startIndexer(t, indexerBin), startIndexer(t, indexerBin), startIndexer(t, indexerBin)}

	args := []string{"-replication", "2", "-listen", "127.0.0.1:0", "-state-listen", "127.0.0.1:0",
		"-metrics", "127.0.0.1:0", "-poll-interval", "1s", "-request-timeout", "10s", "-log-level", "debug",
		"-allow-private-addrs"} // the publisher is on loopback
	for i, n := range nodes {
		args = append(args, "-indexer", fmt.Sprintf("id=n%d,admin=%s,find=%s,ingest=%s", i, n.admin, n.find, n.ingest))
	}
	asg := proctest.Start(t, assignerBin, args...)
	asg.WaitMsg("starting")
	announceURL := "http://" + asg.Addr("announce")
	stateURL := "http://" + asg.Addr("state")
	metricsURL := "http://" + asg.Addr("metrics")

	waitFor(t, "the startup rebuild", func() bool {
		var ixs []assigner.IndexerSnapshot
		if !getJSONWhenRunning(t, stateURL+"/indexers", &ixs) {
			return false
		}
		for _, ix := range ixs {
			if !ix.Known {
				return false
			}
		}
		return len(ixs) == 3
	})

	body, err := announce.Message{Cid: chain.Head(), Addrs: []multiaddr.Multiaddr{pubAddr}}.EncodeCBOR()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(announceURL+"/announce", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /announce: %s, want 405", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodPut, announceURL+"/announce", bytes.NewReader(body))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT /announce: %s", resp.Status)
	}

	var holders []*node
	waitFor(t, "two nodes to ingest the chain", func() bool {
		holders = holders[:0]
		for _, n := range nodes {
			if n.lastHead(t).Equals(chain.Head()) {
				holders = append(holders, n)
			}
		}
		return len(holders) == 2
	})
	var asgs assigner.Assignments
	getJSON(t, stateURL+"/assignments", &asgs)
	if len(asgs.Publishers) != 1 || asgs.Publishers[0].Publisher != chain.Publisher || len(asgs.Publishers[0].Assignments) != 2 {
		t.Fatalf("GET /assignments: %+v", asgs)
	}
	var third *node
	for _, n := range nodes {
		if n != holders[0] && n != holders[1] {
			third = n
		}
	}
	if !third.lastHead(t).Equals(cid.Undef) {
		t.Fatalf("the third node ingested the chain too")
	}

	// One holder freezes; the next poll hands its publisher off to the
	// third node, which continues from the frozen node's last ad.
	frozen := holders[0]
	req, _ = http.NewRequest(http.MethodPut, frozen.admin+"/freeze", nil)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /freeze: %s", resp.Status)
	}
	frozenID := frozen.status(t).ID
	waitFor(t, "the handoff to the third node", func() bool {
		c, _ := admin.NewClient(third.admin)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		as, err := c.Assigned(ctx)
		return err == nil && len(as) == 1 && as[0].Publisher == chain.Publisher && as[0].Continued == frozenID
	})
	waitFor(t, "the third node to serve the chain's head", func() bool { return third.lastHead(t).Equals(chain.Head()) })
	waitFor(t, "the handoff to be recorded", func() bool {
		getJSON(t, stateURL+"/assignments", &asgs)
		return len(asgs.Handoffs) == 0 && len(asgs.Publishers) == 1 && len(asgs.Publishers[0].Assignments) == 3
	})

	resp, err = http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`indexkit_assigner_requests_total{indexer="n`, `outcome="done"`, `kind="handoff"`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code := asg.Stop(); code != 0 {
		t.Fatalf("assigner exited %d\n%s", code, asg.Output())
	}
	for _, n := range nodes {
		if code := n.Stop(); code != 0 {
			t.Fatalf("indexer exited %d", code)
		}
	}
}
