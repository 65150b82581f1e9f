package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/cors"
)

// backend is a fake indexer find listener: /health and /stats when
// given, 404 otherwise, counting the requests it gets.
type backend struct {
	*httptest.Server
	hits atomic.Int64
}

func newBackend(t *testing.T, health, stats string) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		body := map[string]string{"/health": health, "/stats": stats}[r.URL.Path]
		if body == "" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(b.Close)
	return b
}

func TestStatusReport(t *testing.T) {
	active := newBackend(t, `{"Status":"ok","State":"active","ID":"12D3KooWA"}`, `{"EntriesCount":120,"EntriesEstimate":100,"EntriesExact":true,"Providers":3}`)
	frozen := newBackend(t, `{"Status":"ok","State":"frozen"}`, `{"EntriesEstimate":7,"Providers":1}`)
	old := newBackend(t, "", "") // a find API without /health and /stats
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	asg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/indexers":
			w.Write([]byte(`[{"ID":"indexer-0","PeerID":"12D3KooWF","Known":true,"Online":true,"Frozen":true,"Assigned":[{"Publisher":"P1"}]},
				{"ID":"indexer-1","Known":true,"Online":true,"Assigned":[{"Publisher":"P1","Continued":"12D3KooWF"},{"Publisher":"P2"}]}]`))
		case "/assignments":
			w.Write([]byte(`{"Replication":1,"Publishers":[{"Publisher":"P1","Required":1,"Assignments":[{"Indexer":"indexer-0","Frozen":true},{"Indexer":"indexer-1","Continued":"12D3KooWF"}]},
				{"Publisher":"P2","Assignments":[{"Indexer":"indexer-1"}]},{"Publisher":"P3","Waiting":"no-candidate"}],
				"Handoffs":[{"Publisher":"P4","From":"indexer-0","FrozenID":"12D3KooWF","Waiting":"no-candidate"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer asg.Close()

	backends := []string{active.URL, frozen.URL, old.URL, down.URL}
	st, err := NewStatus(func() Local {
		return Local{Backends: backends, Breakers: []string{"closed", "closed", "closed", "open"}, Lookups: 42, Partial: 2}
	}, WithAssigner(asg.URL+"/"), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("answer %s, headers %v", resp.Status, resp.Header)
	}
	var rep Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Lookups != 42 || rep.Partial != 2 || rep.Entries == nil || *rep.Entries != 127 || rep.EntriesExact || rep.Time.IsZero() {
		t.Errorf("report counters: lookups %d, partial %d, entries %v (exact %v), time %v; want 42, 2, 127 (120+7, not exact: 7 is an estimate), set",
			rep.Lookups, rep.Partial, ptr(rep.Entries), rep.EntriesExact, rep.Time)
	}
	want := []struct {
		state, id, breaker string
		entries, providers string
		exact              bool
		errHas             string
	}{
		{"active", "12D3KooWA", "closed", "120", "3", true, ""},
		{"frozen", "", "closed", "7", "1", false, ""},
		{StateUnknown, "", "closed", "nil", "nil", false, "no GET /health; no GET /stats"},
		{StateDown, "", "open", "nil", "nil", false, "connect"},
	}
	if len(rep.Indexers) != len(want) {
		t.Fatalf("%d indexers, want %d: %+v", len(rep.Indexers), len(want), rep.Indexers)
	}
	for i, w := range want {
		ix := rep.Indexers[i]
		if ix.URL != backends[i] || ix.State != w.state || ix.ID != w.id || ix.Breaker != w.breaker ||
			ptr(ix.Entries) != w.entries || ptr(ix.Providers) != w.providers || ix.EntriesExact != w.exact || !strings.Contains(ix.Error, w.errHas) || (w.errHas == "") != (ix.Error == "") {
			t.Errorf("indexer %d = %+v (entries %s, providers %s); want %+v", i, ix, ptr(ix.Entries), ptr(ix.Providers), w)
		}
	}
	a := rep.Assigner
	if a == nil {
		t.Fatal("no assigner in the report")
	}
	if a.URL != asg.URL || a.Error != "" || a.Replication != 1 || len(a.Indexers) != 2 || !a.Indexers[0].Frozen || a.Indexers[1].Publishers != 2 {
		t.Errorf("assigner = %+v", a)
	}
	if len(a.Publishers) != 3 || len(a.Publishers[0].Holders) != 2 || a.Publishers[0].Holders[1] != (Holder{Indexer: "indexer-1", Continued: "12D3KooWF"}) ||
		a.Publishers[2].Waiting != "no-candidate" || a.Publishers[2].Holders == nil {
		t.Errorf("publishers = %+v", a.Publishers)
	}
	if len(a.Handoffs) != 1 || a.Handoffs[0] != (Handoff{Publisher: "P4", From: "indexer-0", Waiting: "no-candidate"}) {
		t.Errorf("handoffs = %+v", a.Handoffs)
	}
}

func ptr(p *uint64) string {
	if p == nil {
		return "nil"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}

// TestStatusOneRound: many status requests at once, and one after the
// other within the max age, cost one round of backend requests; the next
// round comes once the max age has passed, or at once when the backends
// change.
func TestStatusOneRound(t *testing.T) {
	b1 := newBackend(t, `{"Status":"ok","State":"active"}`, `{"EntriesCount":1}`)
	b2 := newBackend(t, "", "")
	var mu sync.Mutex
	backends := []string{b1.URL, b2.URL}
	now := time.Unix(1e9, 0)
	st, err := NewStatus(func() Local {
		mu.Lock()
		defer mu.Unlock()
		return Local{Backends: backends}
	})
	if err != nil {
		t.Fatal(err)
	}
	st.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	report := func() {
		t.Helper()
		if _, err := st.Report(t.Context()); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(report)
	}
	wg.Wait()
	report()
	if got := st.Rounds(); got != 1 || b1.hits.Load() != 2 || b2.hits.Load() != 2 {
		t.Fatalf("21 reports within the max age: %d rounds, backend requests %d and %d; want 1 round of 2 requests each", got, b1.hits.Load(), b2.hits.Load())
	}
	mu.Lock()
	now = now.Add(DefaultMaxAge)
	mu.Unlock()
	report()
	if got := st.Rounds(); got != 2 {
		t.Fatalf("a report after the max age: %d rounds, want 2", got)
	}
	mu.Lock()
	backends = backends[:1]
	mu.Unlock()
	report()
	if got := st.Rounds(); got != 3 {
		t.Fatalf("a report after the backends changed: %d rounds, want 3", got)
	}
}

// TestStatusWaiterLeaves: a request that gives up while another's round
// runs gets its context's error, and the round still completes.
func TestStatusWaiterLeaves(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.NotFound(w, r)
	}))
	defer slow.Close()
	st, err := NewStatus(func() Local { return Local{Backends: []string{slow.URL}} })
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { _, err := st.Report(context.Background()); first <- err }()
	for len(st.sem) == 0 { // the first report's round has started
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.Report(ctx); err != context.Canceled {
		t.Errorf("a waiter whose context ended: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the first report: %v", err)
	}
}

func TestNewStatusInvalid(t *testing.T) {
	local := func() Local { return Local{} }
	for name, f := range map[string]func() (*Status, error){
		"nil local":   func() (*Status, error) { return NewStatus(nil) },
		"nil client":  func() (*Status, error) { return NewStatus(local, WithHTTPClient(nil)) },
		"zero maxage": func() (*Status, error) { return NewStatus(local, WithMaxAge(0)) },
		"zero round":  func() (*Status, error) { return NewStatus(local, WithRoundTimeout(-1)) },
	} {
		if _, err := f(); err == nil || !strings.Contains(err.Error(), ErrInvalidOption.Error()) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidOption", name, err)
		}
	}
}

func TestHandlersMethods(t *testing.T) {
	st, err := NewStatus(func() Local { return Local{} })
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/{$}", Page())
	mux.Handle("/status.json", st)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/", 200, "text/html; charset=utf-8"},
		{"OPTIONS", "/", 204, ""},
		{"POST", "/", 405, "text/plain; charset=utf-8"},
		{"GET", "/status.json", 200, "application/json; charset=utf-8"},
		{"OPTIONS", "/status.json", 204, ""},
		{"DELETE", "/status.json", 405, "text/plain; charset=utf-8"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ctype || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s %s: %s, Content-Type %q, ACAO %q; want %d, %q, *", tc.method, tc.path, resp.Status,
				resp.Header.Get("Content-Type"), resp.Header.Get("Access-Control-Allow-Origin"), tc.status, tc.ctype)
		}
		if tc.status != 200 && tc.status != 204 && resp.Header.Get("Allow") != cors.ReadOnly {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, resp.Header.Get("Allow"), cors.ReadOnly)
		}
	}
}
