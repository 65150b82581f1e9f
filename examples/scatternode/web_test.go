package scatternode_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/web"
)

// The find listener serves the page at / and its status at /status.json
// beside the find API; the status counts the front end's lookups (partial
// ones too) and reads the assigner's state API when AssignerURL is set.
func TestPageAndStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no results for query", http.StatusNotFound) // a find API without /health
	}))
	defer empty.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	asg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/indexers":
			w.Write([]byte(`[{"ID":"indexer-0","Online":true}]`))
		case "/assignments":
			w.Write([]byte(`{"Replication":1,"Publishers":[{"Publisher":"P1","Assignments":[{"Indexer":"indexer-0"}]}]}`))
		}
	}))
	defer asg.Close()

	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{empty.URL, gone.URL}
	cfg.AssignerURL = "bad"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln}); err == nil || !strings.Contains(err.Error(), `AssignerURL "bad"`) {
		t.Errorf("New with AssignerURL \"bad\": %v, want an error naming it", err)
	}
	cfg.AssignerURL = asg.URL + "/"
	s, err := scatternode.New(ctx, cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	base := s.Addrs().FindURL()

	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("/"); resp.StatusCode != 200 || !strings.Contains(body, `<input id="q"`) {
		t.Errorf("GET /: %s %.100q", resp.Status, body)
	}
	if resp, _ := get("/multihash/QmPZ9gcCEpqKTo6aq61g2nXGUhM4iCL3ewB6LDXZCtioEB"); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a lookup with one backend gone: %s, want 502", resp.Status)
	}
	if resp, _ := get("/cid/not-a-cid"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad CID: %s, want 400", resp.Status)
	}
	if st := s.Stats(); st != (scatternode.Stats{Lookups: 1, Partial: 1}) {
		t.Errorf("Stats = %+v, want one lookup, partial (a bad CID is no lookup)", st)
	}
	resp, body := get("/status.json")
	var rep web.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /status.json: %s %v %q", resp.Status, err, body)
	}
	if rep.Lookups != 1 || rep.Partial != 1 || len(rep.Indexers) != 2 ||
		rep.Indexers[0].State != web.StateUnknown || rep.Indexers[1].State != web.StateDown ||
		rep.Assigner == nil || rep.Assigner.URL != asg.URL || len(rep.Assigner.Publishers) != 1 {
		t.Errorf("status = %+v (assigner %+v)", rep, rep.Assigner)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
