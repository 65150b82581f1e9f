package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

// gatedIndexer passes Index calls to the node's real indexer, reporting
// each call's commit and, while shut, holding it until the gate opens.
type gatedIndexer struct {
	agent.Indexer
	calls chan string
	mu    sync.Mutex
	gate  chan struct{} // nil: open
}

func (g *gatedIndexer) shut() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedIndexer) open() {
	g.mu.Lock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
	g.mu.Unlock()
}

func (g *gatedIndexer) Index(ctx context.Context, r lease.Row) (int64, error) {
	g.calls <- r.Commit
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return g.Indexer.Index(ctx, r)
}

// addCommit adds a commit on main of the bare repository path, with
// files as its whole tree, and returns its SHA.
func addCommit(t *testing.T, path, parent string, files []sourceFile) string {
	t.Helper()
	var s bytes.Buffer
	fmt.Fprintf(&s, "commit refs/heads/main\nmark :1\ncommitter Fleet Test <fleet@example.invalid> 1700009999 +0000\ndata 6\nsecond\nfrom %s\ndeleteall\n", parent)
	for _, f := range files {
		fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", f.Path, len(f.Data), f.Data)
	}
	s.WriteString("\nget-mark :1\n")
	out, err := git(context.Background(), path, s.Bytes(), "fast-import", "--quiet", "--date-format=raw")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestWarmingThenCommitChange runs a node in this process (its real
// store, manager, git indexer and HTTP handler, on a real Redis) with its
// Index calls gated: while the owner indexes a repo the first time it
// answers 503 {"status":"warming","owner":…}; when the catalog's commit
// changes it indexes the new commit while answering from the old index
// (the answers name the old commit), then from the new one, and never
// answers "warming" again.
func TestWarmingThenCommitChange(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeRedis)
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 1, sizeRange{1 << 10, 4 << 10}, 21)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	cfg := nodeConfig{Name: "node-a", storeFlags: env.sf, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, tuning: e2eTuning()}
	g := &gatedIndexer{calls: make(chan string, 10)}
	n := startNode(ctx, t, env, cfg, func(x agent.Indexer) agent.Indexer { g.Indexer = x; return g }, g.open)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")

	g.shut()
	if err := putCatalog(ctx, env.tab, n.store, repos, 1); err != nil {
		t.Fatal(err)
	}
	if c := <-g.calls; c != r.Commit {
		t.Fatalf("Index at %s, want %s", c, r.Commit)
	}
	code, _, ref, err := search(ctx, hc, n.addr, r.ID, q, 10)
	if err != nil || code != http.StatusServiceUnavailable || ref == nil || ref.Status != "warming" || ref.Owner != "node-a" {
		t.Fatalf("query while the owner indexes: %d %+v %v; want 503 warming, owner node-a", code, ref, err)
	}
	g.open()
	var served []string // the commit of each answer from now on
	ask := func(q string) *searchResult {
		t.Helper()
		code, res, ref, err := search(ctx, hc, n.addr, r.ID, q, 10)
		if err != nil || code != http.StatusOK {
			t.Fatalf("query %q after the first index: %d %+v %v; want 200", q, code, ref, err)
		}
		served = append(served, res.Commit)
		return res
	}
	waitFor(t, 20*time.Second, "the first index", func() (bool, string) {
		code, res, ref, _ := search(ctx, hc, n.addr, r.ID, q, 10)
		return code == http.StatusOK && res.Commit == r.Commit, fmt.Sprintf("%d %+v", code, ref)
	})
	row1, _ := n.store.Get(ctx, r.ID)

	// A new commit whose README has a line the old one lacks.
	files := append([]sourceFile{{Path: "README.md", Data: []byte("# moved on\nsecond-commit-line\n")}}, r.Files[1:]...)
	c2 := addCommit(t, r.Path, r.Commit, files)
	g.shut()
	if err := n.store.Put(ctx, lease.Item{ID: r.ID, Commit: c2, Size: r.Estimate(), MinBid: r.Estimate()}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-g.calls:
		if c != c2 {
			t.Fatalf("reindex at %s, want %s", c, c2)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no Index call at the new commit within 15s of the catalog change")
	}
	for range 5 { // the new index is held at the gate: the old one answers
		if res := ask(q); res.Commit != r.Commit || len(res.Matches) != 1 {
			t.Fatalf("during the reindex: commit %s, %d matches; want the old commit %s and its marker", res.Commit, len(res.Matches), r.Commit)
		}
	}
	g.open()
	waitFor(t, 20*time.Second, "answers from the new commit", func() (bool, string) {
		res := ask("second-commit-line")
		return res.Commit == c2 && len(res.Matches) == 1, fmt.Sprintf("commit %s, %d matches", res.Commit, len(res.Matches))
	})
	// The node serves the new index first and then records it in its
	// row: wait for the row, bounded.
	var row2 lease.Row
	waitFor(t, 10*time.Second, "the row to record the reindex", func() (bool, string) {
		row2, _ = n.store.Get(ctx, r.ID)
		return row2.LastIndexed.After(row1.LastIndexed), fmt.Sprintf("%+v", row2)
	})
	if row2.Owner != "node-a" || row2.Fence != row1.Fence || !row2.Ready {
		t.Errorf("after the reindex: row %+v; want the same grant (fence %d), ready, indexed after %v", row2, row1.Fence, row1.LastIndexed)
	}
	t.Logf("answers after the first index named commits %v", compact(served))
}

func compact(ss []string) []string {
	var out []string
	for _, s := range ss {
		if len(out) == 0 || out[len(out)-1] != s[:8] {
			out = append(out, s[:8])
		}
	}
	return out
}

// TestMaxBidsAtRuntime runs 2 node processes with a static max-bids of 5
// and an auction window of a minute: an auction with both nodes' bids
// stays open until `fleet set -max-bids 2`, after which it closes at once
// (short-circuited, not timed out).
func TestMaxBidsAtRuntime(t *testing.T) {
	t.Parallel()
	needGit(t)
	for _, kind := range []string{storeRedis, storeEtcd} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			maxBidsAtRuntime(t, kind)
		})
	}
}

func maxBidsAtRuntime(t *testing.T, kind string) {
	env := testStore(t, kind)
	bin := proctest.Build(t, "./examples/fleet")
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 1, sizeRange{1 << 10, 2 << 10}, 31)
	if err != nil {
		t.Fatal(err)
	}
	tun := tuningFor(kind)
	tun.MaxBids, tun.Window = 5, time.Minute
	store, err := env.b.newStore(env.prefix, tun.storeOptions(lease.Hooks{})...)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var nodes []*testNode
	for _, name := range []string{"node-a", "node-b"} {
		args := append(env.args("node", "-name", name, "-budget", "64MiB",
			"-work-dir", t.TempDir(), "-drain-timeout", "5s"), tun.args()...)
		nodes = append(nodes, &testNode{name: name, p: proctest.Start(t, bin, args...)})
	}
	for _, n := range nodes {
		n.addr = n.p.Addr("http")
		n.p.WaitMsg("starting")
	}
	if err := putCatalog(ctx, env.tab, store, repos, 1); err != nil {
		t.Fatal(err)
	}
	id := repos[0].ID
	waitFor(t, 10*time.Second, "both nodes' bids in the open auction", func() (bool, string) {
		r, err := store.Get(ctx, id)
		return err == nil && r.Bids == 2, fmt.Sprintf("%+v %v", r, err)
	})
	if r, _ := store.Get(ctx, id); r.Owner != "" {
		t.Fatalf("granted to %s with 2 of 5 bids", r.Owner)
	}
	set := time.Now()
	out, err := exec.Command(bin, env.args("set", "-max-bids", "2")...).CombinedOutput()
	if err != nil {
		t.Fatalf("fleet set: %v\n%s", err, out)
	}
	waitFor(t, 10*time.Second, "the auction to close at the new threshold", func() (bool, string) {
		r, err := store.Get(ctx, id)
		return err == nil && r.Owner != "", fmt.Sprintf("%+v %v", r, err)
	})
	t.Logf("granted %v after fleet set (window %v)", time.Since(set).Round(time.Millisecond), tun.Window)
	var short, timedOut int64
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	for _, n := range nodes {
		st := getStatus(t, hc, n.addr)
		short += st.Counters["auctions_short_circuited"]
		timedOut += st.Counters["auctions_timed_out"]
		// Each node logs the setting when its watch delivers it, which for
		// the node that did not grant may be after the auction closed.
		from := 0
		n.p.WaitLine(&from, `msg="max-bids set" max_bids=2 was=5`, 10*time.Second)
	}
	if short != 1 || timedOut != 0 {
		t.Errorf("auctions: %d short-circuited, %d timed out; want 1, 0", short, timedOut)
	}
}

// TestSim runs `fleet sim` small: 3 nodes, 30 repos and one row too
// large for every budget, one node SIGKILLed; the report shows full
// coverage before and after the kill, the starved row reported by every
// node, and every row idle after the survivors' SIGTERM.
func TestSim(t *testing.T) {
	t.Parallel()
	needGit(t)
	addr, prefix := testRedis(t)
	out := runSimFor(t, []string{
		`full coverage: 30/30 repos ready after`,
		`SIGKILL node-\w \(pid \d+\), which held \d+ repos`,
		`full coverage again after`,
		`steady state: the redis server handled [1-9]\d* requests/s over 1s, \d+ per node`,
		`starved \(too large for the budget of [\d.]+ MiB, never bid on\): 1 rows`,
		`huge-0000 needs [\d.]+ MiB; reported by 3/3 nodes`,
		`after SIGTERM of the survivors: 31/31 rows idle`,
	}, "-redis", addr, "-prefix", prefix, "-nodes", "3", "-repos", "30",
		"-max-size", "16KiB", "-ttl", "2s", "-liveness", "1s", "-heartbeat", "250ms", "-window", "500ms",
		"-oversize", "1", "-steady", "1s")
	checkRehydration(t, out)
}

// TestSimAutoscale runs `fleet sim -autoscale both` on a real Redis: two
// nodes of a catalog sized for five saturate; once the sim acts on their
// grow decisions it reaches full coverage with the nodes they ask for,
// and a spare node started afterwards, which holds nothing, asks to be
// stopped and is.
func TestSimAutoscale(t *testing.T) {
	t.Parallel()
	needGit(t)
	addr, prefix := testRedis(t)
	runSimFor(t, []string{
		`without acting: (\d+)/40 repos ready \(\d+%\), no gain after t=[\d.]+m?s: saturated`,
		`acting on grow: full coverage after [\dm.]+s, [1-3] nodes started`,
		`decisions logged by the nodes: [1-9]\d* grow, [1-9]\d* shrink; stopped on shrink: \[node-\w\]`,
		`spare node-\w held 0 repos and stopped itself`,
	}, "-redis", addr, "-prefix", prefix, "-nodes", "5", "-repos", "40",
		"-max-size", "16KiB", "-ttl", "2s", "-liveness", "1s", "-heartbeat", "250ms", "-window", "500ms",
		"-budget", "1MiB", "-autoscale", "both", "-autoscale-start", "2", "-saturation-rounds", "10", "-idle-after", "2s",
		"-scale-cooldown", "1s", "-scale-gap", "1s")
}

// TestCorruptIndexRebuilt runs a node in this process on a real Redis and
// flips one byte of its index in memory: the integrity check drops it at
// once, so that the node answers "warming" and never from the corrupted
// index while it rebuilds (held back here), counts it in /metrics, and
// answers from the rebuilt index, at the same commit, once it is done.
func TestCorruptIndexRebuilt(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeRedis)
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 1, sizeRange{1 << 10, 4 << 10}, 31)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	tun := e2eTuning()
	tun.VerifyEvery = 0 // checked by hand below
	cfg := nodeConfig{Name: "node-a", storeFlags: env.sf, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, tuning: tun}
	n := startNode(ctx, t, env, cfg, nil, nil)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
	if err := putCatalog(ctx, env.tab, n.store, repos, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the first index", func() (bool, string) {
		code, _, ref, _ := search(ctx, hc, n.addr, r.ID, q, 10)
		return code == http.StatusOK, fmt.Sprintf("%d %+v", code, ref)
	})
	if c := n.verifyOnce(ctx); c != 0 {
		t.Fatalf("an intact index found corrupt %d times", c)
	}

	// The rebuild's clone waits for gate.
	gate := make(chan struct{})
	url := n.idx.url
	n.idx.url = func(ctx context.Context, item string) (string, error) {
		<-gate
		return url(ctx, item)
	}
	ri := n.idx.get(r.ID)
	ri.files[0].data[len(ri.files[0].data)/2] ^= 0x20
	done := make(chan int)
	go func() { done <- n.verifyOnce(ctx) }()
	waitFor(t, 5*time.Second, "the corrupted index out", func() (bool, string) { return n.idx.get(r.ID) == nil, "" })
	for range 3 {
		code, res, ref, err := search(ctx, hc, n.addr, r.ID, q, 10)
		if err != nil || code != http.StatusServiceUnavailable || ref == nil || ref.Status != "warming" {
			t.Fatalf("query while the corrupted index is rebuilt: %d %+v %+v %v; want 503 warming", code, res, ref, err)
		}
	}
	if m := metrics(t, hc, n.addr); !strings.Contains(m, "indexkit_fleet_index_corrupt_total 1\n") {
		t.Errorf("/metrics after one corrupted index:\n%s", m)
	}
	close(gate)
	if c := <-done; c != 1 {
		t.Fatalf("verify found %d corrupted indexes, want 1", c)
	}
	code, res, ref, err := search(ctx, hc, n.addr, r.ID, q, 10)
	if err != nil || code != http.StatusOK || res.Commit != r.Commit || len(res.Matches) != 1 {
		t.Fatalf("query after the rebuild: %d %+v %+v %v; want 200 at %s with 1 match", code, res, ref, err, r.Commit)
	}
	if err := n.idx.get(r.ID).Verify(); err != nil {
		t.Fatalf("the rebuilt index: %v", err)
	}
}

// metrics returns the node's GET /metrics.
func metrics(t *testing.T, hc *http.Client, addr string) string {
	t.Helper()
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sizedIndexer reports each index at the row's estimate, so that the
// node's free memory after a win is what the test sets up.
type sizedIndexer struct{ agent.Indexer }

func (x sizedIndexer) Index(ctx context.Context, r lease.Row) (int64, error) {
	if _, err := x.Indexer.Index(ctx, r); err != nil {
		return 0, err
	}
	return r.Size, nil
}

// TestNodeLoadMetrics runs an autoscaling node in this process on a real
// Redis, and on a real etcd, with two repos that each fit its budget but not together: it
// claims one, and once its scans see no claim for the saturation rounds,
// GET /metrics shows the other saturated and one grow decision, with the
// claim latency, bid window, index time and index bytes of the win, and
// the time of the last query served.
func TestNodeLoadMetrics(t *testing.T) {
	for _, store := range []string{storeRedis, storeEtcd} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			testNodeLoadMetrics(t, store)
		})
	}
}

func testNodeLoadMetrics(t *testing.T, store string) {
	needGit(t)
	env := testStore(t, store)
	ctx := context.Background()
	repos, err := generateRepos(ctx, t.TempDir(), 2, sizeRange{1 << 10, 4 << 10}, 37)
	if err != nil {
		t.Fatal(err)
	}
	e0, e1 := repos[0].Estimate(), repos[1].Estimate()
	cfg := nodeConfig{Name: "node-a", storeFlags: env.sf, Prefix: env.prefix, Budget: byteSize(e0 + e1 - 1), WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, tuning: tuningFor(store), Autoscale: true, SaturationRounds: 5, ScaleCooldown: time.Hour,
		TraceFile: filepath.Join(t.TempDir(), "spans.json")}
	n := startNode(ctx, t, env, cfg, func(x agent.Indexer) agent.Indexer { return sizedIndexer{x} }, nil)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	if err := putCatalog(ctx, env.tab, n.store, repos, 1); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"indexkit_fleet_saturated_items 1\n",
		"indexkit_fleet_unclaimed_items 1\n",
		"indexkit_fleet_claim_latency_seconds_count 1\n",
		`indexkit_fleet_index_seconds_count{from="git"} 1` + "\n",
		"indexkit_fleet_index_bytes_count 1\n",
		`indexkit_fleet_autoscale_decisions_total{decision="grow"} 1` + "\n",
	}
	var m string
	waitFor(t, 30*time.Second, "a saturated repo and a grow decision in /metrics", func() (bool, string) {
		m = metrics(t, hc, n.addr)
		for _, w := range want {
			if !strings.Contains(m, w) {
				return false, "no " + strings.TrimSpace(w)
			}
		}
		return true, ""
	})
	if !strings.Contains(m, "indexkit_fleet_bid_window_seconds_count") || strings.Contains(m, "indexkit_fleet_bid_window_seconds_count 0\n") {
		t.Errorf("no bid window observed:\n%s", m)
	}
	held := n.mgr.Held()
	if len(held) != 1 {
		t.Fatalf("held %v, want one repo", held)
	}
	q := "marker-" + strings.TrimPrefix(held[0].Item, "repo-")
	if code, _, ref, err := search(ctx, hc, n.addr, held[0].Item, q, 10); err != nil || code != http.StatusOK {
		t.Fatalf("query of the held repo: %d %+v %v", code, ref, err)
	}
	waitFor(t, 5*time.Second, "the last query's time in /metrics", func() (bool, string) {
		m = metrics(t, hc, n.addr)
		return strings.Contains(m, "indexkit_fleet_last_served_timestamp_seconds ") &&
			!strings.Contains(m, "indexkit_fleet_last_served_timestamp_seconds 0\n"), ""
	})
	// The trace file has a span of each kind.
	if err := n.tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	spans, err := os.ReadFile(cfg.TraceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agent.claim", "agent.index", "agent.serve"} {
		if !bytes.Contains(spans, []byte(`"Name":"`+name+`"`)) {
			t.Errorf("no %s span in the trace file:\n%.2000s", name, spans)
		}
	}
}
