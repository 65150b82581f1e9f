package querynode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
)

// startOpen starts a query node without a token (hosts: its
// AllowedHosts) on a real HTTP server on 127.0.0.1.
func startOpen(t *testing.T, hosts ...string) *node {
	t.Helper()
	c := cluster(t, "memory", "q1")
	n := c["q1"]
	qn, err := querynode.New(querynode.Config{Name: n.name, Dir: n.dir, Store: n.st, AllowedHosts: hosts}, stable(c, nil, "q1"))
	if err != nil {
		t.Fatal(err)
	}
	n.Node = qn
	n.srv.set(qn.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.runWG.Add(1)
	go func() {
		defer n.runWG.Done()
		if err := qn.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	return n
}

// postAs posts body to the node's batch path over real HTTP with the Host
// and headers given ("" Host: the URL's, 127.0.0.1:port).
func postAs(t *testing.T, n *node, host string, hdr map[string]string, body []byte) (int, keyspace.BatchAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.srv.URL+keyspace.PathBatch, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans keyspace.BatchAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, ans
}

// A node without a token writes nothing for a DNS-rebound page (Host
// rebind.evil.example:PORT: 421) nor for a page at another origin
// (Origin: 403), and the refusal names the problem; the same batch to
// Host 127.0.0.1:PORT is applied.
func TestWriteAPIRefusesBrowsers(t *testing.T) {
	n := startOpen(t)
	b := batch(1, putOp(t, 1, 1, "a", 1))
	body, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	port := n.srv.URL[strings.LastIndex(n.srv.URL, ":")+1:]
	code, ans := postAs(t, n, "rebind.evil.example:"+port, nil, body)
	if want := "Host rebind.evil.example:" + port + " is not a loopback address"; code != http.StatusMisdirectedRequest || !strings.Contains(ans.Error, want) || !strings.Contains(ans.Error, "-shard-hosts") {
		t.Errorf("rebound batch: %d %+v, want 421 saying %q and naming -shard-hosts", code, ans, want)
	}
	code, ans = postAs(t, n, "", map[string]string{"Origin": "http://127.0.0.2:8080"}, body)
	if code != http.StatusForbidden || !strings.Contains(ans.Error, "Origin http://127.0.0.2:8080") {
		t.Errorf("cross-origin batch: %d %+v, want 403 naming the Origin", code, ans)
	}
	// An export, a copy and a drop are refused alike.
	for _, path := range []string{keyspace.PathCopy, keyspace.PathDrop} {
		req, _ := http.NewRequest(http.MethodPost, n.srv.URL+path, strings.NewReader(`{"Epoch":1}`))
		req.Host = "rebind.evil.example:" + port
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("rebound %s: %d, want 421", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, n.srv.URL+keyspace.PathExport, nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a page's export: %d, want 403", resp.StatusCode)
	}
	if g := got(t, n.st, mhOf(t, 1)); len(g) != 0 {
		t.Fatalf("a refused batch was applied: %v", g)
	}
	if w := n.Status().Writers; len(w) != 0 {
		t.Fatalf("a refused batch moved a writer's position: %+v", w)
	}

	if code, ans := postAs(t, n, "", nil, body); code != http.StatusOK || ans.Applied != 1 {
		t.Fatalf("batch to 127.0.0.1: %d %+v, want 200 Applied 1", code, ans)
	}
	if g := got(t, n.st, mhOf(t, 1)); len(g) != 1 {
		t.Fatalf("key 1 after the batch to 127.0.0.1: %v", g)
	}
}

// AllowedHosts lets a name through; a bad one fails New.
func TestWriteAPIAllowedHosts(t *testing.T) {
	n := startOpen(t, "query-0.internal")
	b := batch(1, putOp(t, 1, 1, "a", 1))
	body, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, ans := postAs(t, n, "query-0.internal:3100", nil, body); code != http.StatusOK || ans.Applied != 1 {
		t.Errorf("batch to an allowed name: %d %+v", code, ans)
	}
	c := cluster(t, "memory", "q2")
	_, err = querynode.New(querynode.Config{Name: "q2", Dir: c["q2"].dir, Store: c["q2"].st, AllowedHosts: []string{"query-0:3100"}}, stable(c, nil, "q2"))
	if !errors.Is(err, querynode.ErrInvalidConfig) || !strings.Contains(err.Error(), "query-0:3100") {
		t.Errorf("New with a host with a port: %v, want ErrInvalidConfig naming it", err)
	}
}
