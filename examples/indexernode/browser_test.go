package indexernode_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/internal/cli"
	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/browsertest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/store"
)

// rebindHost is the name a DNS-rebinding page is served under: first
// from the attacker's server, then re-pointed at 127.0.0.1. It never
// reaches a resolver: the tests send it as a Host header, or the browser
// reaches it through the test's proxy.
const rebindHost = "rebind.evil.example"

// adminDo sends one request to the admin API at adminURL (connecting to
// its address) with the Host and Origin given ("": the URL's Host, no
// Origin) and returns the status and body.
func adminDo(t *testing.T, method, adminURL, path, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, adminURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// adminState reads whether the node is frozen and what is assigned to it
// through a plain client on 127.0.0.1.
func adminState(t *testing.T, adminURL string) (frozen bool, assigned []peer.ID) {
	t.Helper()
	c, err := admin.NewClient(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	as, err := c.Assigned(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		assigned = append(assigned, a.Publisher)
	}
	return st.Frozen, assigned
}

// The indexer program without an admin token, as started by default:
// `curl -X PUT -H 'Host: rebind.evil.example:PORT' http://127.0.0.1:PORT/freeze`
// (what a DNS-rebound page sends) is refused 421 naming the Host and the
// way out, and the node is not frozen; an assign from a page at another
// origin is refused 403; a name of -admin-hosts is answered; and the
// same PUT /freeze to Host 127.0.0.1:PORT freezes the node.
func TestAdminRefusesForeignHost(t *testing.T) {
	t.Setenv(cli.EnvAdminToken, "")
	r := runIndexer(t, useAssigner, func(c *indexernode.Config) { c.AdminHosts = []string{"indexer-0.test"} })
	port := r.admin[strings.LastIndex(r.admin, ":")+1:]
	pub := newID(t)

	code, body := adminDo(t, http.MethodPut, r.admin, "/freeze", rebindHost+":"+port, "")
	if want := "Host " + rebindHost + ":" + port + " is not a loopback address"; code != http.StatusMisdirectedRequest ||
		!strings.Contains(body, want) || !strings.Contains(body, "-admin-hosts") || !strings.Contains(body, "indexer-0.test") {
		t.Errorf("rebound PUT /freeze: %d %q, want 421 saying %q, naming -admin-hosts and the allowed name", code, body, want)
	}
	code, body = adminDo(t, http.MethodPost, r.admin, "/ingest/assign/"+pub.String(), rebindHost+":"+port, "")
	if code != http.StatusMisdirectedRequest {
		t.Errorf("rebound assign: %d %q, want 421", code, body)
	}
	code, body = adminDo(t, http.MethodPost, r.admin, "/ingest/assign/"+pub.String(), "", "http://127.0.0.2:8080")
	if code != http.StatusForbidden || !strings.Contains(body, "Origin http://127.0.0.2:8080") {
		t.Errorf("cross-origin assign: %d %q, want 403 naming the Origin", code, body)
	}
	if frozen, assigned := adminState(t, r.admin); frozen || len(assigned) != 0 {
		t.Fatalf("after the refused requests: frozen %v, assigned %v; want neither", frozen, assigned)
	}

	if code, body := adminDo(t, http.MethodPost, r.admin, "/ingest/assign/"+pub.String(), "indexer-0.test:"+port, ""); code != http.StatusOK {
		t.Errorf("assign to a name of -admin-hosts: %d %q, want 200", code, body)
	}
	if code, body := adminDo(t, http.MethodPut, r.admin, "/freeze", "", ""); code != http.StatusOK {
		t.Errorf("PUT /freeze to 127.0.0.1: %d %q, want 200", code, body)
	}
	if frozen, assigned := adminState(t, r.admin); !frozen || len(assigned) != 1 || assigned[0] != pub {
		t.Errorf("after the allowed requests: frozen %v, assigned %v; want frozen, %s assigned", frozen, assigned, pub)
	}
}

// queryNode runs a query node without a token on 127.0.0.1 whose layout
// gives it every key and lists no writer; its log goes to log.
func queryNode(t *testing.T, log *slog.Logger) *querynode.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layout := filepath.Join(dir, "layout.json")
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://" + ln.Addr().String()}}, Current: []string{"q1"}}
	if err := keyspace.Save(layout, l); err != nil {
		t.Fatal(err)
	}
	cfg := querynode.DefaultConfig()
	cfg.Dir, cfg.Name, cfg.Layout, cfg.Store, cfg.Logger = filepath.Join(dir, "q1"), "q1", layout, "memory", log
	n, err := querynode.New(cfg, ln)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("query node: %v", err)
		}
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// batchB64 is a one-put batch of writer for mh, base64, for a page to
// decode and post.
func batchB64(t *testing.T, writer string, mh multihash.Multihash) string {
	t.Helper()
	b := keyspace.Batch{Writer: writer, Stream: 1, Epoch: 1, Seq: 1, Ops: []keyspace.Op{{Kind: keyspace.OpPut,
		Value:       store.Value{ProviderID: newID(t), ContextID: []byte("ctx"), Metadata: []byte{0x80, 0x12}},
		Multihashes: []multihash.Multihash{mh}}}}
	body, err := b.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(body)
}

// attackScript is the JavaScript of an attacker's page: it runs each
// attempt in order, whatever the one before gave, records what the page
// could see of the answer (an opaque answer is "opaque 0"; a failed
// fetch, "error ..."), and sets window.done to the JSON of the results.
func attackScript(attempts string) string {
	return `<!doctype html><title>attack</title><script>
const results = {};
const bytes = b64 => Uint8Array.from(atob(b64), c => c.charCodeAt(0));
async function attempt(name, url, init) {
  try { const r = await fetch(url, init); results[name] = r.type + " " + r.status; }
  catch (e) { results[name] = "error " + e.message; }
}
(async () => {
` + attempts + `
  window.done = JSON.stringify(results);
})();
</script>`
}

// rebindProxy is the browser's HTTP proxy, standing in for DNS
// rebinding: for rebindHost:port it serves GET / from pages[port] (the
// attacker's page, as served before the name is re-pointed) and forwards
// every other request to 127.0.0.1:port with its Host header as the
// browser sent it (what reaches a node once the name points at
// 127.0.0.1). It serves nothing else.
func rebindProxy(t *testing.T, pages map[string]string) string {
	t.Helper()
	fwd := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = "http", "127.0.0.1:"+r.In.URL.Port()
		r.Out.Host = r.In.Host
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Port()]
		if r.URL.Hostname() != rebindHost || !ok {
			http.Error(w, "the test proxy serves only "+rebindHost, http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page)
			return
		}
		fwd.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	return serveOn(t, "127.0.0.1:0", srv)
}

// serveOn serves srv on addr until the test ends and returns its URL.
func serveOn(t *testing.T, addr string, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// lockedBuffer is a log sink safe for the node's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBrowserPagesCannotWrite drives headless Chromium against an indexer
// and a query node started without tokens, as by default, on 127.0.0.1:
//
//   - a page at another loopback origin (http://127.0.0.2:PORT/) sends
//     no-cors POSTs, which the browser sends without asking: an assign to
//     the admin API and a batch to the query node's write API, and tries
//     PUT /freeze (a CORS request: its preflight is not granted);
//   - pages of a DNS-rebinding attack (http://rebind.evil.example:PORT/,
//     served first by the attacker, then re-pointed at 127.0.0.1 through
//     the browser's proxy) send same-origin requests, PUT included: PUT
//     /freeze and an assign to the admin API's port, a batch to the query
//     node's.
//
// After each page has run (window.done), nothing has changed: the node is
// not frozen, nothing is assigned, the query node holds neither
// multihash and knows no writer; the rebound pages read 421 for each of
// their requests, and the nodes logged the cross-origin page's requests
// as refused with 403.
func TestBrowserPagesCannotWrite(t *testing.T) {
	bin := browsertest.Chromium(t)
	t.Setenv(cli.EnvAdminToken, "")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	ix := runIndexer(t, useAssigner)
	var qlog lockedBuffer
	qn := queryNode(t, slog.New(slog.NewTextHandler(&qlog, nil)))
	adminPort := ix.admin[strings.LastIndex(ix.admin, ":")+1:]
	queryPort := qn.URL()[strings.LastIndex(qn.URL(), ":")+1:]
	pubA, pubB := newID(t), newID(t)
	mhA, _ := multihash.Sum([]byte("written by a page at another origin"), multihash.SHA2_256, -1)
	mhB, _ := multihash.Sum([]byte("written by a rebound page"), multihash.SHA2_256, -1)

	crossOrigin := attackScript(fmt.Sprintf(`
  await attempt("assign", %q, {method: "POST", mode: "no-cors"});
  await attempt("freeze", %q, {method: "PUT"});
  await attempt("batch", %q, {method: "POST", mode: "no-cors", body: bytes(%q)});`,
		ix.admin+"/ingest/assign/"+pubA.String(), ix.admin+"/freeze",
		qn.URL()+keyspace.PathBatch, batchB64(t, "page", mhA)))
	rebindAdmin := attackScript(fmt.Sprintf(`
  await attempt("freeze", "/freeze", {method: "PUT"});
  await attempt("assign", %q, {method: "POST"});`, "/ingest/assign/"+pubB.String()))
	rebindQuery := attackScript(fmt.Sprintf(`
  await attempt("batch", %q, {method: "POST", body: bytes(%q)});`, keyspace.PathBatch, batchB64(t, "rebind", mhB)))

	pageURL := serveOn(t, "127.0.0.2:0", &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, crossOrigin)
		})})
	proxy := rebindProxy(t, map[string]string{adminPort: rebindAdmin, queryPort: rebindQuery})

	bctx, stop := browsertest.Start(ctx, t, bin, chromedp.ProxyServer(proxy),
		chromedp.Flag("disable-features", "HttpsUpgrades,HttpsFirstBalancedModeAutoEnable"))
	defer stop()
	results := map[string]map[string]string{}
	for _, page := range []struct{ name, url string }{
		{"cross-origin", pageURL + "/"},
		{"rebound admin", "http://" + rebindHost + ":" + adminPort + "/"},
		{"rebound query", "http://" + rebindHost + ":" + queryPort + "/"},
	} {
		if err := chromedp.Do(bctx, chromedp.Navigate(page.url)); err != nil {
			t.Fatalf("%s page %s: %v", page.name, page.url, err)
		}
		done, err := chromedp.Run(bctx, chromedp.Poll[string](`window.done`, chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil {
			t.Fatalf("%s page %s did not finish: %v", page.name, page.url, err)
		}
		var res map[string]string
		if err := json.Unmarshal([]byte(done), &res); err != nil {
			t.Fatalf("%s page results %q: %v", page.name, done, err)
		}
		t.Logf("%s page (%s): %v", page.name, page.url, res)
		results[page.name] = res
	}

	if frozen, assigned := adminState(t, ix.admin); frozen || len(assigned) != 0 {
		t.Errorf("after the pages ran: frozen %v, assigned %v; want neither", frozen, assigned)
	}
	for _, mh := range []multihash.Multihash{mhA, mhB} {
		if vs, err := qn.Store().Get(ctx, mh); err != nil || len(vs) != 0 {
			t.Errorf("after the pages ran: the query node holds %v (err %v) for a page's multihash", vs, err)
		}
	}
	if w := qn.Shard().Status().Writers; len(w) != 0 {
		t.Errorf("after the pages ran: the query node knows writers %v", w)
	}
	// The rebound pages are same-origin with the nodes: they read each
	// answer, which must be the guard's.
	for page, names := range map[string][]string{"rebound admin": {"freeze", "assign"}, "rebound query": {"batch"}} {
		for _, name := range names {
			if got := results[page][name]; got != "basic 421" {
				t.Errorf("%s page, %s: %q, want the node's 421", page, name, got)
			}
		}
	}
	// The cross-origin page's no-cors requests reached the nodes, which
	// refused them: its answers are opaque to it, the logs are not.
	refused := func(log, msg, path string) bool {
		for line := range strings.Lines(log) {
			if strings.Contains(line, "msg=\""+msg+"\"") && strings.Contains(line, "method=POST path="+path+" status=403") {
				return true
			}
		}
		return false
	}
	if log := strings.Join(ix.tap.Lines(), "\n"); !refused(log, "admin request refused", "/ingest/assign/"+pubA.String()) {
		t.Errorf("the indexer did not log the cross-origin assign as refused with 403:\n%s", log)
	}
	if !refused(qlog.String(), "write request refused", keyspace.PathBatch) {
		t.Errorf("the query node did not log the cross-origin batch as refused with 403:\n%s", qlog.String())
	}
}
