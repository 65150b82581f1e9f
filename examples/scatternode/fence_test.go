package scatternode_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/examples/scatternode"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store/storetest"
)

// While Config.Fenced reports true no answer looks complete: a key that
// is there comes back 200 marked incomplete (no-store, X-IPNI-Backends
// 0/1), one that is not 502 instead of 404, and so does a batch; a cached
// answer too. Once the fence lifts the answers are complete again.
func TestFenced(t *testing.T) {
	var fenced atomic.Bool
	cfg := scatternode.DefaultConfig()
	cfg.Backends = []string{backend(t, "a", 3)}
	cfg.CacheEntries = 100
	cfg.Fenced = fenced.Load
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scatternode.New(t.Context(), cfg, scatternode.Listeners{Find: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context()) }()
	base := s.Addrs().FindURL()
	have := storetest.Multihashes("a", 3)[0]
	missing := storetest.Multihashes("nobody", 1)[0]
	get := func(path string) (int, http.Header) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	batch := func() int {
		t.Helper()
		body, _ := json.Marshal(map[string][]string{"Multihashes": {base64.StdEncoding.EncodeToString(missing)}})
		resp, err := http.Post(base+"/multihash", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	check := func(wantFenced bool) {
		t.Helper()
		code, h := get("/multihash/" + have.B58String())
		complete := h.Get(find.HeaderBackends) == "" && h.Get("Cache-Control") == ""
		if code != http.StatusOK || complete == wantFenced {
			t.Errorf("fenced %v: a key that is there: %d, %s %q, Cache-Control %q", wantFenced, code, find.HeaderBackends, h.Get(find.HeaderBackends), h.Get("Cache-Control"))
		}
		wantMissing := http.StatusNotFound
		if wantFenced {
			wantMissing = http.StatusBadGateway
		}
		if code, _ := get("/multihash/" + missing.B58String()); code != wantMissing {
			t.Errorf("fenced %v: a key that is not there: %d, want %d", wantFenced, code, wantMissing)
		}
		if code := batch(); code != wantMissing {
			t.Errorf("fenced %v: a batch of a key that is not there: %d, want %d", wantFenced, code, wantMissing)
		}
	}
	check(false) // and fills the cache
	fenced.Store(true)
	check(true)
	fenced.Store(false)
	check(false)
	if st := s.Stats(); st.Partial != 3 {
		t.Errorf("Stats: %d partial lookups, want the 3 fenced ones", st.Partial)
	}
}
