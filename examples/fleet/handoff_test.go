package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
)

// TestFetchHandoffChecks runs a node in this process on a real Redis and
// offers it an index from a peer (a loopback server of the test's): what
// the peer sends must check as a snapshot does, at the offered commit,
// before the node takes it; a good one is taken and its entry deleted.
func TestFetchHandoffChecks(t *testing.T) {
	t.Parallel()
	env := testStore(t, storeRedis)
	ctx := context.Background()
	cfg := nodeConfig{Name: "node-b", storeFlags: env.sf, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, tuning: e2eTuning()}
	n := startNode(ctx, t, env, cfg, nil, nil)

	ix := newIndex(smallTree)
	good := encodeSnapshot(ix, testCommit)
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
	if err := env.tab.addrs.Set(ctx, map[string]string{"node-a": strings.TrimPrefix(peer.URL, "http://")}); err != nil {
		t.Fatal(err)
	}
	offer := func(commit, from string) {
		t.Helper()
		if err := env.tab.handoffs.Set(ctx, map[string]string{"repo-x": handoffValue(commit, from)}); err != nil {
			t.Fatal(err)
		}
	}
	entry := func() string {
		v, err := env.tab.handoffs.Get(ctx, "repo-x")
		if errors.Is(err, errNoEntry) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// No entry, an entry at another commit, an entry of the node itself:
	// nothing offered, and no request.
	if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no entry: %v, want fs.ErrNotExist", err)
	}
	offer(strings.Repeat("b", 40), "node-a")
	if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("entry at another commit: %v, want fs.ErrNotExist", err)
	}
	offer(testCommit, "node-b")
	if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("entry of the node itself: %v, want fs.ErrNotExist", err)
	}
	if served.Load() != 0 {
		t.Fatalf("%d requests to the peer, want none", served.Load())
	}

	offer(testCommit, "node-a")
	// One byte flipped anywhere: refused (errCorrupt), the entry kept.
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20 {
		bad := bytes.Clone(good)
		bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
		body.Store(&bad)
		if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, errCorrupt) {
			t.Fatalf("flipped byte: %v, want errCorrupt", err)
		}
	}
	// An index of another commit under this one's name: refused.
	other := encodeSnapshot(ix, strings.Repeat("c", 40))
	body.Store(&other)
	if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, errCorrupt) {
		t.Fatalf("index of another commit: %v, want errCorrupt", err)
	}
	if entry() == "" {
		t.Fatal("a refused index deleted the entry")
	}
	// The good one: taken, answers as the original, entry deleted.
	body.Store(&good)
	got, err := n.fetchHandoff(ctx, "repo-x", testCommit)
	if err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "handed off", got, smallTree, queriesOf(rng, smallTree, 50))
	if v := entry(); v != "" {
		t.Fatalf("entry %q left after the fetch", v)
	}
	// A peer that no longer has it: 404, the stale entry deleted.
	offer(testCommit, "node-a")
	body.Store(nil)
	if _, err := n.fetchHandoff(ctx, "repo-x", testCommit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("peer without it: %v, want fs.ErrNotExist", err)
	}
	if v := entry(); v != "" {
		t.Fatalf("entry %q left after a 404", v)
	}
}

// TestDrainHandsOff runs two node processes on a real Redis and on a real
// etcd, without a snapshot directory: node-a wins every repo, then gets SIGTERM while
// node-b runs. node-b must take every repo over from node-a's memory
// (GET /snapshot), with no clone, answer queries on them, and node-a must
// stop once all were fetched, leaving no entry behind.
func TestDrainHandsOff(t *testing.T) {
	t.Parallel()
	needGit(t)
	for _, kind := range []string{storeRedis, storeEtcd} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testDrainHandsOff(t, kind)
		})
	}
}

func testDrainHandsOff(t *testing.T, kind string) {
	env := testStore(t, kind)
	bin := proctest.Build(t, "./examples/fleet")
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 8, sizeRange{1 << 10, 8 << 10}, 41)
	if err != nil {
		t.Fatal(err)
	}
	tun := tuningFor(kind)
	store, err := env.b.newStore(env.prefix, tun.storeOptions(lease.Hooks{})...)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	work := t.TempDir()
	start := func(name string) *testNode {
		args := append(env.args("node", "-name", name, "-budget", "64MiB", "-work-dir", work,
			"-log-level", "debug", "-handoff-wait", "20s"), tun.args()...)
		n := &testNode{name: name, p: proctest.Start(t, bin, args...)}
		n.addr = n.p.Addr("http")
		n.p.WaitMsg("starting")
		return n
	}
	a := start("node-a")
	if err := putCatalog(ctx, env.tab, store, repos, 1); err != nil {
		t.Fatal(err)
	}
	ownedBy := func(name string) func() (bool, string) {
		return func() (bool, string) {
			n := 0
			for _, r := range repos {
				row, err := store.Get(ctx, r.ID)
				if err == nil && row.Owner == name && row.Ready {
					n++
				}
			}
			return n == len(repos), fmt.Sprintf("%d of %d ready at %s", n, len(repos), name)
		}
	}
	waitFor(t, 30*time.Second, "every repo ready at node-a", ownedBy("node-a"))
	b := start("node-b")

	a.p.Signal(syscall.SIGTERM)
	waitFor(t, 30*time.Second, "every repo ready at node-b", ownedBy("node-b"))
	if code := a.p.Wait(30 * time.Second); code != 0 {
		t.Fatalf("node-a exited with %d after SIGTERM\n%s", code, a.p.Output())
	}
	if !strings.Contains(a.p.Output(), fmt.Sprintf("msg=\"handoff: done\" offered=%d fetched=%d left=0", len(repos), len(repos))) {
		t.Errorf("node-a did not report every index fetched:\n%s", a.p.Output())
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	st := getStatus(t, hc, b.addr)
	if got := st.Counters["handoffs_loaded"]; got != int64(len(repos)) {
		t.Errorf("node-b handoffs_loaded %d, want %d\n%s", got, len(repos), b.p.Output())
	}
	if strings.Contains(b.p.Output(), "from=git") {
		t.Errorf("node-b cloned a repo it was handed:\n%s", b.p.Output())
	}
	for _, r := range repos {
		q := fmt.Sprintf("marker-%s", strings.TrimPrefix(r.ID, "repo-"))
		code, res, ref, err := search(ctx, hc, b.addr, r.ID, q, maxLimit)
		if err != nil || code != http.StatusOK || len(res.Matches) != 1 {
			t.Fatalf("search %s for %q at node-b: %d %+v %+v %v", r.ID, q, code, res, ref, err)
		}
	}
	if left, err := env.tab.handoffs.List(ctx); err != nil || len(left) != 0 {
		t.Errorf("handoff entries left: %v %v", left, err)
	}
}
