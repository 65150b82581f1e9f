package fleetnode_test

import (
	"context"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	fleetetcd "github.com/indexkit/indexkit/examples/fleetnode/etcd"
	fleetredis "github.com/indexkit/indexkit/examples/fleetnode/redis"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/poll"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
)

// The stores a node runs on in these tests.
const (
	storeRedis = "redis"
	storeEtcd  = "etcd"
)

func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		redistest.Unavailable(tb, "git not found: %v", err)
	}
}

// waitFor is poll.Until: cond every 50 ms until it holds, failing the
// test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, d, what, cond)
}

// testEnv is a store for a test: a Backend, a fresh key prefix whose keys
// are deleted at the end, and the side tables.
type testEnv struct {
	kind   string
	b      fleetnode.Backend
	prefix string
	tab    fleetnode.Tables
}

// testStore returns a testEnv on kind: a redis-server of the test's own on
// a free loopback port when the binary exists (else REDIS_ADDR or
// 127.0.0.1:6379), or a single-member etcd of its own
// (internal/testbed/etcdtest); each killed by PID at the end.
func testStore(t *testing.T, kind string) testEnv {
	t.Helper()
	e := testEnv{kind: kind}
	switch kind {
	case storeRedis:
		addr := redistest.Addr()
		if _, err := exec.LookPath("redis-server"); err == nil {
			addr = redistest.StartServer(t).Addr()
		}
		c := redistest.Client(t, addr)
		e.b, e.prefix = fleetredis.New(c), redistest.Prefix(t, c, "fleet")
	case storeEtcd:
		c := etcdtest.Start(t)
		cli := etcdtest.Client(t, c.Endpoints()...)
		e.b, e.prefix = fleetetcd.New(cli), etcdtest.Prefix(t, cli, "fleet")
	default:
		t.Fatalf("unknown store %q", kind)
	}
	e.tab = e.b.Tables(e.prefix)
	return e
}

// testTiming is fast: a node lost is replaced within about TTL + window
// + a reindex; on etcd the liveness window is whole seconds.
func testTiming(kind string) fleetnode.Timing {
	t := fleetnode.DefaultTiming()
	t.TTL, t.Window, t.Liveness, t.Heartbeat, t.Scan = 3*time.Second, time.Second, 1500*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond
	t.BackoffBase, t.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
	if kind == storeEtcd {
		t.Liveness = 2 * time.Second
	}
	return t
}

// testConfig is a node named name on env with the test timing.
func testConfig(t *testing.T, env testEnv, name string) fleetnode.Config {
	return fleetnode.Config{Name: name, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, Timing: testTiming(env.kind)}
}

// startNode runs a node in the test process on env's store, on a
// loopback listener, until the test ends; beforeStop, when not nil, runs
// first at cleanup (to open a gated indexer, say).
func startNode(ctx context.Context, t *testing.T, env testEnv, cfg fleetnode.Config, beforeStop func()) *fleetnode.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := fleetnode.New(cfg, env.b, ln)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	waitFor(t, 5*time.Second, "the node's address published", func() (bool, string) {
		a, err := env.tab.Addrs.Get(ctx, cfg.Name)
		return err == nil && a == n.Addr(), ""
	})
	t.Cleanup(func() {
		if beforeStop != nil {
			beforeStop()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run %s: %v", cfg.Name, err)
		}
		n.Close()
	})
	return n
}

// putRepos writes repos into env's catalog, each row's Size and MinBid
// the index's estimate.
func putRepos(ctx context.Context, t *testing.T, env testEnv, s lease.Store, repos []repogen.Repo) {
	t.Helper()
	var entries []fleetnode.CatalogEntry
	for _, r := range repos {
		est := codeindex.Estimate(indexFiles(r.Files))
		entries = append(entries, fleetnode.CatalogEntry{Item: lease.Item{ID: r.ID, Commit: r.Commit, Size: est, MinBid: est}, URL: r.URL})
	}
	if err := fleetnode.PutCatalog(ctx, env.tab, s, entries, 1); err != nil {
		t.Fatal(err)
	}
}

// indexFiles are generated files as the index takes them.
func indexFiles(fs []repogen.File) []codeindex.File {
	out := make([]codeindex.File, len(fs))
	for i, f := range fs {
		out[i] = codeindex.File(f)
	}
	return out
}
