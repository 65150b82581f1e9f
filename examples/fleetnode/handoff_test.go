package fleetnode_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
)

// testCommit is an object name for indexes made in tests.
const testCommit = "0123456789abcdef0123456789abcdef01234567"

// smallTree is a generated tree of a few files (repogen).
var smallTree = indexFiles(repogen.Files(rand.New(rand.NewPCG(5, 5)), 5, repogen.Sizes{Min: 2 << 10, Max: 4 << 10}))

// TestFetchHandoffChecks runs a node in this process on a real Redis and
// offers it an index from a peer (a loopback server of the test's): what
// the peer sends must check as a snapshot does, at the offered commit,
// before the node takes it; a good one is taken and its entry deleted.
func TestFetchHandoffChecks(t *testing.T) {
	t.Parallel()
	env := testStore(t, storeRedis)
	ctx := context.Background()
	n := startNode(ctx, t, env, testConfig(t, env, "node-b"), nil)

	ix := codeindex.New(smallTree)
	good := codeindex.Encode(ix, testCommit)
	var body atomic.Pointer[[]byte]
	var served atomic.Int64
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.URL.Path != "/snapshot" || r.URL.Query().Get("item") != "repo-x" || r.URL.Query().Get("commit") != testCommit {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		b := body.Load()
		if b == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(*b)
	}))
	defer peer.Close()
	if err := env.tab.Addrs.Set(ctx, map[string]string{"node-a": strings.TrimPrefix(peer.URL, "http://")}); err != nil {
		t.Fatal(err)
	}
	offer := func(commit, from string) {
		t.Helper()
		if err := env.tab.Handoffs.Set(ctx, map[string]string{"repo-x": fleetnode.HandoffValue(commit, from)}); err != nil {
			t.Fatal(err)
		}
	}
	entry := func() string {
		v, err := env.tab.Handoffs.Get(ctx, "repo-x")
		if errors.Is(err, fleetnode.ErrNoEntry) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// No entry, an entry at another commit, an entry of the node itself:
	// nothing offered, and no request.
	if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no entry: %v, want fs.ErrNotExist", err)
	}
	offer(strings.Repeat("b", 40), "node-a")
	if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("entry at another commit: %v, want fs.ErrNotExist", err)
	}
	offer(testCommit, "node-b")
	if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("entry of the node itself: %v, want fs.ErrNotExist", err)
	}
	if served.Load() != 0 {
		t.Fatalf("%d requests to the peer, want none", served.Load())
	}

	offer(testCommit, "node-a")
	// One byte flipped anywhere: refused (codeindex.ErrCorrupt), the entry kept.
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20 {
		bad := bytes.Clone(good)
		bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
		body.Store(&bad)
		if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, codeindex.ErrCorrupt) {
			t.Fatalf("flipped byte: %v, want codeindex.ErrCorrupt", err)
		}
	}
	// An index of another commit under this one's name: refused.
	other := codeindex.Encode(ix, strings.Repeat("c", 40))
	body.Store(&other)
	if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, codeindex.ErrCorrupt) {
		t.Fatalf("index of another commit: %v, want codeindex.ErrCorrupt", err)
	}
	if entry() == "" {
		t.Fatal("a refused index deleted the entry")
	}
	// The good one: taken, answers as the original, entry deleted.
	body.Store(&good)
	got, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append([]string{"marker-0005", "()", "a", "nothing-like-it"}, repogen.Syllables...) {
		ms, _, err := got.Search(q, 100)
		if want := codeindex.Grep(smallTree, q); err != nil || !reflect.DeepEqual(ms, want) {
			t.Fatalf("the handed-off index, fleetnode.Search(%q) = %v, %v; want %v", q, ms, err, want)
		}
	}
	if v := entry(); v != "" {
		t.Fatalf("entry %q left after the fetch", v)
	}
	// A peer that no longer has it: 404, the stale entry deleted.
	offer(testCommit, "node-a")
	body.Store(nil)
	if _, err := fleetnode.FetchHandoff(n, ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("peer without it: %v, want fs.ErrNotExist", err)
	}
	if v := entry(); v != "" {
		t.Fatalf("entry %q left after a 404", v)
	}
}
