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

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/scatter/find/health"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
)

// backend serves, over a memory store holding n multihashes of one
// provider, the find API and /stats as an indexer's find listener does.
func backend(t *testing.T, name string, n int) string {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	v := store.Value{ProviderID: storetest.PeerID(name), ContextID: []byte("c"), Metadata: []byte("m")}
	if err := st.Put(ctx, v, storetest.Multihashes(name, n)...); err != nil {
		t.Fatal(err)
	}
	if err := st.PutProvider(ctx, store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: v.ProviderID}}); err != nil {
		t.Fatal(err)
	}
	b, err := find.NewStoreBackend(st)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := find.NewHandler(b)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", fh)
	mux.Handle("/stats", health.NewHandler(health.Config{Store: st}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The front end's find listener answers /health with its backend count
// and /stats with the sums of its backends' /stats (a backend down is left
// out), and every route of the listener answers CORS preflights.
func TestFrontHealthStats(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{backend(t, "a", 100), backend(t, "b", 250), down.URL}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	}()
	front := s.Addrs().FindURL()

	var h health.Health
	getJSON(t, front+"/health", &h)
	if h.Status != "ok" || h.State != health.Active || h.Backends == nil || *h.Backends != 3 {
		t.Fatalf("/health: %+v", h)
	}
	var st health.Stats
	getJSON(t, front+"/stats", &st)
	if st.EntriesCount != 350 || st.Providers != 2 || *st.Backends != 3 || *st.BackendsAnswered != 2 {
		t.Fatalf("/stats: %+v, want the sums of two backends (350 entries, 2 providers) of 3", st)
	}
	for _, path := range []string{"/health", "/stats", "/multihash/" + storetest.Multihash("a", 0).B58String(), "/providers",
		"/", "/status.json", "/routing/v1/providers/" + cid.NewCidV1(cid.Raw, storetest.Multihash("a", 0)).String()} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, front+path, nil)
		req.Header.Set("Origin", "https://example.org")
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "GET") {
			t.Errorf("OPTIONS %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: %d %v %q", u, resp.StatusCode, resp.Header, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %q: %v", u, body, err)
	}
}
