package indexernode_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/querynode"
	"github.com/indexkit/indexkit/scatter/keyspace/writer/outbox"
	"github.com/indexkit/indexkit/store/memory"
)

// An ingest node of a keyspace-sharded pool (started with -layout, over
// a real query node) holds no index: its find listener answers lookups
// (find, Delegated Routing V1, batch find, sampling) 421 Misdirected
// Request with a body that says where to ask, never a 5xx, and logs no
// ERROR for them; what it does hold (provider records, health) it still
// serves.
func TestShardedIngestNodeLookups(t *testing.T) {
	const token = "shard-t0ken"
	// A real query node on 127.0.0.1, in the layout the ingest node loads.
	qsrv := httptest.NewServer(nil)
	defer qsrv.Close()
	layout := keyspace.Layout{
		Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes:   []keyspace.Node{{Name: "query-0", URL: qsrv.URL}},
		Current: []string{"query-0"},
		Writers: []string{"ingest-0"},
	}
	qst := memory.New()
	defer qst.Close()
	qn, err := querynode.New(querynode.Config{Name: "query-0", Dir: t.TempDir(), Store: qst, Token: token}, layout)
	if err != nil {
		t.Fatal(err)
	}
	defer qn.Close()
	qsrv.Config.Handler = qn.Handler()
	layoutFile := filepath.Join(t.TempDir(), "layout.json")
	if err := keyspace.Save(layoutFile, layout); err != nil {
		t.Fatal(err)
	}

	r := runIndexer(t, func(c *indexernode.Config) {
		c.Shard = &indexernode.ShardConfig{Layout: layoutFile, Name: "ingest-0", Token: token}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	find := r.find

	mh, _ := multihash.Sum([]byte("a key"), multihash.SHA2_256, -1)
	c := cid.NewCidV1(cid.Raw, mh)
	do := func(method, path, accept, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, find+path, strings.NewReader(body))
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	for _, l := range []struct{ method, path, accept, body string }{
		{"GET", "/multihash/" + mh.B58String(), "", ""},
		{"GET", "/multihash/" + mh.B58String(), "application/x-ndjson", ""},
		{"GET", "/cid/" + c.String(), "application/json", ""},
		{"POST", "/multihash", "", `{"Multihashes":["` + base64.StdEncoding.EncodeToString(mh) + `"]}`},
		{"GET", "/routing/v1/providers/" + c.String(), "application/json", ""},
		{"GET", "/routing/v1/providers/" + c.String(), "application/x-ndjson", ""},
		{"GET", "/ipni/v0/sample/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA/Y3R4", "", ""},
	} {
		code, body := do(l.method, l.path, l.accept, l.body)
		if code != http.StatusMisdirectedRequest {
			t.Errorf("%s %s (Accept %q): %d %q, want 421", l.method, l.path, l.accept, code, body)
			continue
		}
		if !strings.Contains(body, "ingest node") || !strings.Contains(body, "front end") || !strings.Contains(body, "query nodes") {
			t.Errorf("%s %s: body %q does not say that this is an ingest node and to ask the front end or the query nodes", l.method, l.path, body)
		}
	}
	// What an ingest node holds it still serves.
	if code, body := do("GET", "/providers", "application/json", ""); code != http.StatusOK {
		t.Errorf("GET /providers: %d %q, want 200", code, body)
	}
	if code, body := do("GET", "/health", "", ""); code != http.StatusOK {
		t.Errorf("GET /health: %d %q, want 200", code, body)
	}
	for _, line := range r.tap.Lines() {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("logged an error: %s", line)
		}
	}
}

// A sharded node keeps its outbox in Dir/outbox, takes a newer layout
// from its file on ReloadLayout and refuses one that does not load or is
// older, keeping its own; Close releases the outbox.
func TestShardedReloadLayout(t *testing.T) {
	layout := keyspace.Layout{
		Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes:   []keyspace.Node{{Name: "query-0", URL: "http://127.0.0.1:1"}}, // nothing serves it: batches wait
		Current: []string{"query-0"},
		Writers: []string{"ingest-0"},
	}
	layoutFile := filepath.Join(t.TempDir(), "layout.json")
	save := func(epoch uint64) {
		t.Helper()
		l := layout
		l.Epoch = epoch
		if err := keyspace.Save(layoutFile, l); err != nil {
			t.Fatal(err)
		}
	}
	save(1)
	dir := t.TempDir()
	r := runNode(t.Context(), t, testConfig(dir, "memory", func(c *indexernode.Config) {
		c.Shard = &indexernode.ShardConfig{Layout: layoutFile, Name: "ingest-0", Token: "t"}
	}))
	n := r.node
	if st := n.ShardStatus(); st.Epoch != 1 || st.Name != "ingest-0" || st.Role != "ingest" {
		t.Fatalf("ShardStatus at start: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "outbox")); err != nil {
		t.Fatalf("the outbox is not in Dir/outbox: %v", err)
	}

	if err := os.WriteFile(layoutFile, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.ReloadLayout(); !errors.Is(err, keyspace.ErrInvalidLayout) {
		t.Errorf("ReloadLayout of a garbled file: %v, want ErrInvalidLayout", err)
	}
	save(2)
	if err := n.ReloadLayout(); err != nil {
		t.Fatalf("ReloadLayout of epoch 2: %v", err)
	}
	if got := n.ShardStatus().Epoch; got != 2 {
		t.Fatalf("epoch after reloading epoch 2: %d", got)
	}
	save(1)
	if err := n.ReloadLayout(); !errors.Is(err, keyspace.ErrStaleEpoch) {
		t.Errorf("ReloadLayout of epoch 1 over 2: %v, want ErrStaleEpoch", err)
	}
	if got := n.ShardStatus().Epoch; got != 2 {
		t.Errorf("epoch after the refusals: %d, want 2 kept", got)
	}

	r.stop()
	ob, err := outbox.Open(filepath.Join(dir, "outbox"))
	if err != nil {
		t.Fatalf("outbox after the node's Close: %v (still held?)", err)
	}
	ob.Close()
}
