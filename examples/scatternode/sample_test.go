package scatternode_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/find/sample"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/storetest"
	"github.com/multiformats/go-multihash"
)

// sampleBackend serves, over a memory store holding ctxs (context ID →
// multihashes, put in the order given), the sampling API as an
// indexer's find listener does.
func sampleBackend(t *testing.T, ctxs map[string][]multihash.Multihash) string {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	for c, mhs := range ctxs {
		v := store.Value{ProviderID: storetest.PeerID("sampled"), ContextID: []byte(c), Metadata: []byte("m")}
		if err := st.Put(context.Background(), v, mhs...); err != nil {
			t.Fatal(err)
		}
	}
	h, err := sample.NewHandler(st)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(sample.Prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sampleGet asks base for the sample of context c with beacon b and
// returns the status, the CIDs, and the error message of a failure.
func sampleGet(t *testing.T, base, c, b string) (int, []string, string) {
	t.Helper()
	resp, err := http.Get(base + sample.Prefix + storetest.PeerID("sampled").String() + "/" + base64.URLEncoding.EncodeToString([]byte(c)) + "?max=10&beacon=" + b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Samples []sample.Link `json:"samples"`
		Error   string        `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %q is not the spec's JSON", c, resp.StatusCode, body)
	}
	var cids []string
	for _, l := range r.Samples {
		cids = append(cids, l.CID)
	}
	return resp.StatusCode, cids, r.Error
}

// The front end serves the sampling API from whichever of its two
// indexers holds the context (both, for a context both ingested in other
// orders, answering alike), 404 for a context neither holds; a front end
// over a keyspace ring answers 501 saying why.
func TestFrontSample(t *testing.T) {
	shared := storetest.Multihashes("front-sample", 500)
	reversed := slices.Clone(shared)
	slices.Reverse(reversed)
	a := sampleBackend(t, map[string][]multihash.Multihash{"shared": shared, "a": storetest.Multihashes("sample-a", 30)})
	b := sampleBackend(t, map[string][]multihash.Multihash{"shared": reversed, "b": storetest.Multihashes("sample-b", 40)})
	start := func(cfg scatternode.Config) string {
		t.Helper()
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
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			s.Close()
		})
		return s.Addrs().FindURL()
	}
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{a, b}
	front := start(cfg)
	const beacon = "3439d92d58e47d342131d446a3abe264396dd264717897af30525c98408c834f"
	for _, tc := range []struct{ ctx, backend string }{{"shared", a}, {"shared", b}, {"a", a}, {"b", b}} {
		_, want, _ := sampleGet(t, tc.backend, tc.ctx, beacon)
		code, got, msg := sampleGet(t, front, tc.ctx, beacon)
		if code != http.StatusOK || len(got) != 10 || !slices.Equal(got, want) {
			t.Fatalf("front end, context %q: %d %v %q; the indexer holding it answers %v", tc.ctx, code, got, msg, want)
		}
	}
	if code, _, msg := sampleGet(t, front, "neither", beacon); code != http.StatusNotFound || msg == "" {
		t.Fatalf("a context neither indexer holds: %d %q, want 404", code, msg)
	}
	cfg.Ring = &scatternode.Ring{Vnodes: 16, Replication: 2}
	ringFront := start(cfg)
	if code, _, msg := sampleGet(t, ringFront, "shared", beacon); code != http.StatusNotImplemented || !strings.Contains(msg, "keyspace-sharded") {
		t.Fatalf("a front end over a keyspace ring: %d %q, want 501 saying its backends are keyspace-sharded", code, msg)
	}
}
