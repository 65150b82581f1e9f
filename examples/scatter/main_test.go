package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
	findapi "github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// Bounds of every wait in these tests.
const (
	waitStart = 30 * time.Second // the binary logs its addresses
	waitLog   = 15 * time.Second // a log line after a signal
	waitExit  = 15 * time.Second // the process exits after SIGTERM
)

// testPeer returns a deterministic provider for i.
func testPeer(t *testing.T, i int) peer.AddrInfo {
	t.Helper()
	seed := sha256.Sum256(fmt.Appendf(nil, "indexkit scatter example peer %d", i))
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	a, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/10.0.0.%d/tcp/3000/http", i+1))
	if err != nil {
		t.Fatal(err)
	}
	return peer.AddrInfo{ID: id, Addrs: []multiaddr.Multiaddr{a}}
}

func testMH(t *testing.T, s string) multihash.Multihash {
	t.Helper()
	mh, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return mh
}

// entry is one value of a test indexer.
type entry struct {
	mh       multihash.Multihash
	provider peer.AddrInfo
	context  string
	metadata string
}

// indexer is a store-backed find API on 127.0.0.1 that can be made to fail.
type indexer struct {
	srv  *httptest.Server
	down atomic.Bool // answer 503 to everything
}

func newIndexer(t *testing.T, entries ...entry) *indexer {
	t.Helper()
	ctx := t.Context()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	for _, e := range entries {
		if err := s.PutProvider(ctx, store.ProviderInfo{AddrInfo: e.provider, LastAdvertisementTime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, store.Value{ProviderID: e.provider.ID, ContextID: []byte(e.context), Metadata: []byte(e.metadata)}, e.mh); err != nil {
			t.Fatal(err)
		}
	}
	ix := &indexer{}
	sb, err := findapi.NewStoreBackend(s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := findapi.NewHandler(sb)
	if err != nil {
		t.Fatal(err)
	}
	ix.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ix.down.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ix.srv.Close)
	return ix
}

// writeFile replaces path atomically, so that a reload never reads half a
// file.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// found is a find answer: status, X-IPNI-Backends, Cache-Control, and the
// results as "peerID/context/metadata", sorted.
type found struct {
	status       int
	backends     string
	cacheControl string
	results      []string
}

func find(t *testing.T, client *http.Client, base string, mh multihash.Multihash) found {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/multihash/"+mh.B58String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f := found{status: resp.StatusCode, backends: resp.Header.Get(findapi.HeaderBackends), cacheControl: resp.Header.Get("Cache-Control")}
	if resp.StatusCode == http.StatusOK {
		var fr findapi.FindResponse
		if err := json.Unmarshal(body, &fr); err != nil {
			t.Fatalf("decoding %s: %v", body, err)
		}
		for _, mr := range fr.MultihashResults {
			for _, pr := range mr.ProviderResults {
				f.results = append(f.results, fmt.Sprintf("%s/%s/%s", pr.Provider.ID, pr.ContextID, pr.Metadata))
			}
		}
		slices.Sort(f.results)
	}
	return f
}

func result(p peer.AddrInfo, context, metadata string) string {
	return fmt.Sprintf("%s/%s/%s", p.ID, context, metadata)
}

// TestBinary builds the command and runs it as a process in front of
// store-backed indexers on 127.0.0.1: merged answers, an honest 404, a
// partial answer, metrics, a reload on SIGHUP that adds a backend, a bad
// reload that keeps it, and a clean exit on SIGTERM.
func TestBinary(t *testing.T) {
	bin := proctest.Build(t, "github.com/indexkit/indexkit/examples/scatter")

	t.Run("invalid", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, "no backends"},
			{[]string{"-backends", "http://127.0.0.1:1,http://127.0.0.1:1/"}, `backend "http://127.0.0.1:1/" is listed twice`},
			{[]string{"-backends", "127.0.0.1:1"}, `backend "127.0.0.1:1": want an http or https URL`},
			{[]string{"-backends", "ftp://127.0.0.1:1"}, "scheme must be http or https"},
			{[]string{"-config", filepath.Join(t.TempDir(), "missing.json")}, "no such file"},
		} {
			p := proctest.Start(t, bin, append(tc.args, "-listen", "127.0.0.1:0", "-metrics", "")...)
			if code := p.Wait(waitExit); code != 1 {
				t.Errorf("%q: exit code %d, want 1", tc.args, code)
			}
			if !strings.Contains(p.Output(), tc.want) {
				t.Errorf("%q: output does not say %q:\n%s", tc.args, tc.want, p.Output())
			}
		}
	})

	t.Run("busy port", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		busy := ln.Addr().String()
		for _, flag := range []string{"-listen", "-metrics"} {
			args := []string{"-backends", "http://127.0.0.1:1", "-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", flag, busy}
			p := proctest.Start(t, bin, args...)
			if code := p.Wait(waitExit); code != 1 {
				t.Errorf("%s on a busy port: exit code %d, want 1", flag, code)
			}
			want := "scatter: " + flag + " " + busy + ": listen tcp " + busy + ": bind: address already in use"
			if out := p.Output(); !strings.Contains(out, want) || strings.Contains(out, "panic") {
				t.Errorf("%s on a busy port: output does not say %q, or panics:\n%s", flag, want, out)
			}
		}
	})

	t.Run("serve", func(t *testing.T) { testServe(t, bin) })
}

func testServe(t *testing.T, bin string) {
	provA, provB, provC, provD := testPeer(t, 0), testPeer(t, 1), testPeer(t, 2), testPeer(t, 3)
	mhBoth := testMH(t, "on both indexers")
	mhPartial := testMH(t, "asked while indexer 2 is down")
	mhNew := testMH(t, "only on indexer 3")
	mhMissing := testMH(t, "nowhere")
	ix1 := newIndexer(t,
		entry{mhBoth, provA, "a", "m"},
		entry{mhBoth, provC, "shared", "m1"},
		entry{mhPartial, provA, "a", "m"})
	ix2 := newIndexer(t,
		entry{mhBoth, provB, "b", "m"},
		entry{mhBoth, provC, "shared", "m2"}, // disagrees with indexer 1
		entry{mhPartial, provB, "b", "m"})
	ix3 := newIndexer(t, entry{mhNew, provD, "d", "m"})
	u1, u2, u3 := ix1.srv.URL, ix2.srv.URL, ix3.srv.URL

	cfgPath := filepath.Join(t.TempDir(), "scatter.json")
	writeFile(t, cfgPath, fmt.Sprintf(`{"Backends": [%q, %q], "Timeout": "3s"}`, u1, u2))
	p := proctest.Start(t, bin, "-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0", "-config", cfgPath,
		"-cache", "100", "-cache-ttl", "1m", "-log-level", "debug")
	at := 0
	findAddr := p.WaitLine(&at, `msg=listening name=find addr=(127\.0\.0\.1:\d+)`, waitStart)[1]
	metricsAddr := p.WaitLine(&at, `msg=listening name=metrics addr=(127\.0\.0\.1:\d+)`, waitStart)[1]
	base := "http://" + findAddr
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)

	// The union of both indexers, the disagreeing metadata resolved to one
	// result, and no partial marking.
	got := find(t, client, base, mhBoth)
	want := []string{result(provA, "a", "m"), result(provB, "b", "m")}
	if got.status != http.StatusOK || got.backends != "" || len(got.results) != 3 ||
		!slices.Contains(got.results, want[0]) || !slices.Contains(got.results, want[1]) {
		t.Errorf("both: got %+v, want 200, A, B and one C, no %s", got, findapi.HeaderBackends)
	}
	if got := find(t, client, base, mhMissing); got.status != http.StatusNotFound {
		t.Errorf("missing: got %+v, want 404", got)
	}

	ix2.down.Store(true)
	got = find(t, client, base, mhPartial)
	if got.status != http.StatusOK || got.backends != "1/2" || got.cacheControl != "no-store" ||
		!slices.Equal(got.results, []string{result(provA, "a", "m")}) {
		t.Errorf("one indexer down: got %+v, want 200 with A, %s 1/2, no-store", got, findapi.HeaderBackends)
	}
	ix2.down.Store(false)
	if got := find(t, client, base, mhBoth); got.status != http.StatusOK || len(got.results) != 3 {
		t.Errorf("both again (from the cache): got %+v", got)
	}

	metrics := func() string {
		t.Helper()
		resp, err := client.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
		}
		return string(b)
	}
	checkMetrics := func(m string, series ...string) {
		t.Helper()
		for _, s := range series {
			if !strings.Contains(m, s) {
				t.Errorf("/metrics has no %s", s)
			}
		}
		if t.Failed() {
			t.Logf("/metrics:\n%s", m)
		}
	}
	checkMetrics(metrics(),
		fmt.Sprintf(`indexkit_scatter_backend_request_duration_seconds_count{backend=%q} 3`, u1),
		fmt.Sprintf(`indexkit_scatter_backend_request_duration_seconds_bucket{backend=%q,le="+Inf"} 3`, u2),
		fmt.Sprintf(`indexkit_scatter_backend_requests_total{backend=%q} 3`, u2),
		fmt.Sprintf(`indexkit_scatter_backend_errors_total{backend=%q,kind="error"} 1`, u2),
		fmt.Sprintf(`indexkit_scatter_backend_errors_total{backend=%q,kind="error"} 0`, u1),
		fmt.Sprintf(`indexkit_scatter_backend_errors_total{backend=%q,kind="timeout"} 0`, u2),
		fmt.Sprintf(`indexkit_scatter_backend_errors_total{backend=%q,kind="breaker_open"} 0`, u2),
		fmt.Sprintf(`indexkit_scatter_breaker_state{backend=%q} 0`, u1),
		`indexkit_scatter_metadata_disagreements_total{backend=`,
		"indexkit_scatter_partial_answers_total 1",
		"indexkit_scatter_queries_total 4",
		"indexkit_scatter_cache_hits_total 1",
		"indexkit_scatter_cache_misses_total 3",
		"indexkit_scatter_backends 2",
		"go_goroutines ",
	)

	// Reload: indexstar's array form, with a third indexer.
	writeFile(t, cfgPath, fmt.Sprintf(`[%q, %q, %q]`, u1, u2, u3))
	p.Signal(syscall.SIGHUP)
	p.WaitLine(&at, `msg="config reloaded".*added=\[`+regexp.QuoteMeta(u3)+`\]`, waitLog)
	want = []string{result(provD, "d", "m")}
	if got := find(t, client, base, mhNew); got.status != http.StatusOK || got.backends != "" || !slices.Equal(got.results, want) {
		t.Errorf("after reload: got %+v, want 200 with D", got)
	}

	// A bad config is logged and the current backends kept.
	writeFile(t, cfgPath, fmt.Sprintf(`[%q, %q]`, u1, u1))
	p.Signal(syscall.SIGHUP)
	p.WaitLine(&at, `msg="reload failed; keeping the current backends".*listed twice`, waitLog)
	if got := find(t, client, base, mhNew); got.status != http.StatusOK || !slices.Equal(got.results, want) {
		t.Errorf("after a bad reload: got %+v, want 200 with D", got)
	}
	checkMetrics(metrics(),
		"indexkit_scatter_backends 3",
		fmt.Sprintf(`indexkit_scatter_breaker_state{backend=%q} 0`, u3),
		`indexkit_scatter_config_reloads_total{result="applied"} 1`,
		`indexkit_scatter_config_reloads_total{result="failed"} 1`,
		// Counters of the first Gather carry over.
		"indexkit_scatter_partial_answers_total 1",
		fmt.Sprintf(`indexkit_scatter_backend_errors_total{backend=%q,kind="error"} 1`, u2),
		"indexkit_scatter_queries_total 6",
	)

	p.Signal(syscall.SIGTERM)
	if code := p.Wait(waitExit); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0; log:\n%s", code, p.Output())
	}
	p.WaitLine(&at, `msg=stopped`, waitLog)
}
