package fleetnode_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/memory"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
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
func addCommit(t *testing.T, path, parent string, files []repogen.File) string {
	t.Helper()
	var s bytes.Buffer
	fmt.Fprintf(&s, "commit refs/heads/main\nmark :1\ncommitter Fleet Test <fleet@example.invalid> 1700009999 +0000\ndata 6\nsecond\nfrom %s\ndeleteall\n", parent)
	for _, f := range files {
		fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", f.Path, len(f.Data), f.Data)
	}
	s.WriteString("\nget-mark :1\n")
	out, err := repogen.Git(context.Background(), path, s.Bytes(), "fast-import", "--quiet", "--date-format=raw")
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
	repos, err := repogen.Generate(ctx, t.TempDir(), 1, repogen.Sizes{Min: 1 << 10, Max: 4 << 10}, 21)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	cfg := testConfig(t, env, "node-a")
	g := &gatedIndexer{calls: make(chan string, 10)}
	cfg.WrapIndexer = func(x agent.Indexer) agent.Indexer { g.Indexer = x; return g }
	n := startNode(ctx, t, env, cfg, g.open)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")

	g.shut()
	putRepos(ctx, t, env, n.Store(), repos)
	if c := <-g.calls; c != r.Commit {
		t.Fatalf("Index at %s, want %s", c, r.Commit)
	}
	code, _, ref, err := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
	if err != nil || code != http.StatusServiceUnavailable || ref == nil || ref.Status != "warming" || ref.Owner != "node-a" {
		t.Fatalf("query while the owner indexes: %d %+v %v; want 503 warming, owner node-a", code, ref, err)
	}
	g.open()
	var served []string // the commit of each answer from now on
	ask := func(q string) *fleetnode.SearchResult {
		t.Helper()
		code, res, ref, err := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
		if err != nil || code != http.StatusOK {
			t.Fatalf("query %q after the first index: %d %+v %v; want 200", q, code, ref, err)
		}
		served = append(served, res.Commit)
		return res
	}
	waitFor(t, 20*time.Second, "the first index", func() (bool, string) {
		code, res, ref, _ := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
		return code == http.StatusOK && res.Commit == r.Commit, fmt.Sprintf("%d %+v", code, ref)
	})
	row1, _ := n.Store().Get(ctx, r.ID)

	// A new commit whose README has a line the old one lacks.
	files := append([]repogen.File{{Path: "README.md", Data: []byte("# moved on\nsecond-commit-line\n")}}, r.Files[1:]...)
	c2 := addCommit(t, r.Path, r.Commit, files)
	est := row1.Size
	g.shut()
	if err := n.Store().Put(ctx, lease.Item{ID: r.ID, Commit: c2, Size: est, MinBid: est}); err != nil {
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
		row2, _ = n.Store().Get(ctx, r.ID)
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

// TestCorruptIndexRebuilt runs a node in this process on a real Redis and
// flips one byte of its index in memory: the integrity check drops it at
// once, so that the node answers "warming" and never from the corrupted
// index while it rebuilds (held back here), counts it (fleetnode.Status, index_corrupt), and
// answers from the rebuilt index, at the same commit, once it is done.
func TestCorruptIndexRebuilt(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeRedis)
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, t.TempDir(), 1, repogen.Sizes{Min: 1 << 10, Max: 4 << 10}, 31)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	cfg := testConfig(t, env, "node-a")
	cfg.VerifyEvery = 0 // checked by hand below
	n := startNode(ctx, t, env, cfg, nil)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
	putRepos(ctx, t, env, n.Store(), repos)
	waitFor(t, 20*time.Second, "the first index", func() (bool, string) {
		code, _, ref, _ := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
		return code == http.StatusOK, fmt.Sprintf("%d %+v", code, ref)
	})
	if c := n.Verify(ctx); c != 0 {
		t.Fatalf("an intact index found corrupt %d times", c)
	}

	// The rebuild's clone waits for gate.
	gate := make(chan struct{})
	fleetnode.HoldClones(n, gate)
	fleetnode.Corruptible(t, n, r.ID, r.Files)()
	done := make(chan int)
	go func() { done <- n.Verify(ctx) }()
	waitFor(t, 5*time.Second, "the corrupted index out", func() (bool, string) { return fleetnode.IndexOf(n, r.ID) == nil, "" })
	for range 3 {
		code, res, ref, err := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
		if err != nil || code != http.StatusServiceUnavailable || ref == nil || ref.Status != "warming" {
			t.Fatalf("query while the corrupted index is rebuilt: %d %+v %+v %v; want 503 warming", code, res, ref, err)
		}
	}
	if c := n.Status().Counters["index_corrupt"]; c != 1 {
		t.Errorf("index_corrupt after one corrupted index: %d", c)
	}
	close(gate)
	if c := <-done; c != 1 {
		t.Fatalf("verify found %d corrupted indexes, want 1", c)
	}
	code, res, ref, err := fleetnode.Search(ctx, hc, n.Addr(), r.ID, q, 10)
	if err != nil || code != http.StatusOK || res.Commit != r.Commit || len(res.Matches) != 1 {
		t.Fatalf("query after the rebuild: %d %+v %+v %v; want 200 at %s with 1 match", code, res, ref, err, r.Commit)
	}
	if err := fleetnode.IndexOf(n, r.ID).Verify(); err != nil {
		t.Fatalf("the rebuilt index: %v", err)
	}
}

// TestRoutedOnEtcd runs two nodes in this process (their real stores,
// managers, git indexers and HTTP handlers) on a real etcd, over one
// repo: a query sent to the node that does not own it is routed to the
// owner through the address the owner published in etcd.
func TestRoutedOnEtcd(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeEtcd)
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, t.TempDir(), 1, repogen.Sizes{Min: 1 << 10, Max: 4 << 10}, 41)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	nodes := map[string]*fleetnode.Node{}
	for _, name := range []string{"node-a", "node-b"} {
		nodes[name] = startNode(ctx, t, env, testConfig(t, env, name), nil)
	}
	putRepos(ctx, t, env, nodes["node-a"].Store(), repos)
	store := nodes["node-a"].Store()
	waitFor(t, 20*time.Second, "the repo owned and ready", func() (bool, string) {
		row, err := store.Get(ctx, r.ID)
		return err == nil && row.Owner != "" && row.Ready, fmt.Sprintf("%+v %v", row, err)
	})
	row, _ := store.Get(ctx, r.ID)
	via := nodes["node-a"]
	if row.Owner == via.Name() {
		via = nodes["node-b"]
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
	code, res, ref, err := fleetnode.Search(ctx, hc, via.Addr(), r.ID, q, 10)
	if err != nil || code != http.StatusOK || res.ServedBy != row.Owner || res.RoutedBy != via.Name() || len(res.Matches) != 1 {
		t.Fatalf("GET %s/search?repo=%s&q=%s: %d %+v %+v %v; want 200 served by %s, routed by %s, 1 match",
			via.Name(), r.ID, q, code, res, ref, err, row.Owner, via.Name())
	}
}

// New refuses what it cannot run, with an error that names the problem,
// and leaves the listener to the caller: no Backend, an empty name, a
// heartbeat not below the liveness window, a route the node serves
// itself, and a store that cannot be made (etcd refuses a liveness window
// that is not whole seconds: nothing is closed that was never opened).
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	env := testStore(t, storeEtcd)
	for _, c := range []struct {
		name string
		b    fleetnode.Backend
		edit func(*fleetnode.Config)
		want string
	}{
		{"no backend", nil, func(*fleetnode.Config) {}, "needs a Backend"},
		{"no name", env.b, func(c *fleetnode.Config) { c.Name = "" }, "Config.Name is empty"},
		{"liveness on etcd", env.b, func(c *fleetnode.Config) { c.Liveness = 1500 * time.Millisecond }, "is not a whole number of seconds"},
		{"heartbeat", env.b, func(c *fleetnode.Config) { c.Heartbeat = c.Liveness }, "Heartbeat 2s must be below Liveness 2s"},
		{"own route", env.b, func(c *fleetnode.Config) { c.Routes = map[string]http.Handler{"GET /status": http.NotFoundHandler()} }, `serves "GET /status" itself`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			cfg := testConfig(t, env, "node-a")
			c.edit(&cfg)
			n, err := fleetnode.New(cfg, c.b, ln)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, %v; want an error containing %q", n, err, c.want)
			}
		})
	}
}

// Close without Run releases the listener, and a Run after Close, or a
// second Run, returns ErrRunTwice.
func TestRunOnce(t *testing.T) {
	t.Parallel()
	b := memory.New()
	cfg := fleetnode.DefaultConfig()
	cfg.Name, cfg.Prefix, cfg.WorkDir, cfg.HandoffWait = "node-a", "once:", t.TempDir(), 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := fleetnode.New(cfg, b, ln)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Close without Run")
	}
	if err := n.Run(context.Background()); !errors.Is(err, fleetnode.ErrRunTwice) {
		t.Fatalf("Run after Close: %v, want ErrRunTwice", err)
	}

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := fleetnode.New(cfg, b, ln2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, 5*time.Second, "the address published", func() (bool, string) {
		a, err := b.Tables(cfg.Prefix).Addrs.Get(ctx, "node-a")
		return err == nil && a == m.Addr(), ""
	})
	if err := m.Run(ctx); !errors.Is(err, fleetnode.ErrRunTwice) {
		t.Fatalf("a second Run: %v, want ErrRunTwice", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := b.Tables(cfg.Prefix).Addrs.Get(context.Background(), "node-a"); !errors.Is(err, fleetnode.ErrNoEntry) {
		t.Fatalf("the address after Run returned: %v, want it removed", err)
	}
}
