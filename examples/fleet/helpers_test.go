package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease/agent"
)

// Every test closes its Redis clients and stops its processes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		redistest.Unavailable(tb, "git not found: %v", err)
	}
}

// testRedis returns the address of a Redis for the test and a fresh key
// prefix whose keys are deleted at the end: a redis-server of its own on a
// free loopback port (killed by PID at the end) when the binary exists,
// else REDIS_ADDR or 127.0.0.1:6379.
func testRedis(t *testing.T) (addr, prefix string) {
	t.Helper()
	addr = redistest.Addr()
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr = redistest.StartServer(t).Addr()
	}
	c := redistest.Client(t, addr)
	return addr, redistest.Prefix(t, c, "fleet")
}

// waitFor polls cond every 50ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testEnv is a store for a test: its flags, a fresh key prefix whose keys
// are deleted at the end, a connection, and the side tables.
type testEnv struct {
	sf     storeFlags
	prefix string
	b      *backend
	tab    sideTables
}

// testStore returns a testEnv on kind: for redis as testRedis does, for
// etcd a single-member etcd of the test's own (internal/testbed/etcdtest, killed
// by PID at the end).
func testStore(t *testing.T, kind string) testEnv {
	t.Helper()
	var e testEnv
	switch kind {
	case storeRedis:
		addr, prefix := testRedis(t)
		e.sf, e.prefix = storeFlags{Store: storeRedis, Redis: addr}, prefix
	case storeEtcd:
		c := etcdtest.Start(t)
		cli := etcdtest.Client(t, c.Endpoints()...)
		e.sf, e.prefix = storeFlags{Store: storeEtcd, Etcd: strings.Join(c.Endpoints(), ",")}, etcdtest.Prefix(t, cli, "fleet")
	default:
		t.Fatalf("unknown store %q", kind)
	}
	b, err := dial(context.Background(), e.sf, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e.b, e.tab = b, b.tables(e.prefix)
	return e
}

// args returns a fleet command line: cmd and its flags, then the store's
// flags and -prefix.
func (e testEnv) args(cmd ...string) []string {
	return append(append(cmd, e.sf.args()...), "-prefix", e.prefix)
}

// tuningFor is e2eTuning, with the liveness window a whole second on etcd.
func tuningFor(kind string) tuning {
	t := e2eTuning()
	if kind == storeEtcd {
		t.Liveness = 2 * time.Second
	}
	return t
}

// startNode runs a node in the test process on env's store: its HTTP
// handler on a loopback test server, its address published, its manager
// running until the test ends. wrap, when not nil, wraps its indexer;
// beforeStop, when not nil, runs first at cleanup (to open a gated
// indexer, say).
func startNode(ctx context.Context, t *testing.T, env testEnv, cfg nodeConfig, wrap func(agent.Indexer) agent.Indexer, beforeStop func()) *node {
	t.Helper()
	n, err := newNode(cfg, slog.New(slog.DiscardHandler), env.b, wrap)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.handler())
	n.addr = strings.TrimPrefix(srv.URL, "http://")
	if err := n.publishAddr(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.mgr.Run(rctx) }()
	t.Cleanup(func() {
		if beforeStop != nil {
			beforeStop()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run %s: %v", cfg.Name, err)
		}
		srv.Close()
		n.close()
	})
	return n
}

// checkRehydration checks a `fleet sim -rehydration both` report: the
// first recovery cloned and indexed every repo it rebuilt, the second
// loaded every one from a snapshot, and after the drain every repo was
// fetched from the draining node.
func checkRehydration(t *testing.T, out string) {
	t.Helper()
	re := regexp.MustCompile(`rebuilds: (\d+) Index calls \((\d+) failed\), (\d+) loaded from a snapshot, (\d+) handed off, (\d+) cloned and indexed`)
	m := re.FindAllStringSubmatch(out, -1)
	if len(m) != 3 || !strings.Contains(out, "kill 1, snapshots not loaded") || !strings.Contains(out, "kill 2, snapshots loaded") ||
		!strings.Contains(out, "drain, indexes handed off") {
		t.Fatalf("want two recoveries, without and with snapshots, and a drain:\n%s", out)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	if calls, loaded, handed := n(m[0][1]), n(m[0][3]), n(m[0][4]); calls == 0 || loaded != 0 || handed != 0 {
		t.Errorf("kill 1 (snapshots not loaded): %s", m[0][0])
	}
	if calls, failed, loaded, cloned := n(m[1][1]), n(m[1][2]), n(m[1][3]), n(m[1][5]); calls == 0 || failed != 0 || loaded != calls || cloned != 0 {
		t.Errorf("kill 2 (snapshots loaded): %s", m[1][0])
	}
	if calls, failed, handed, cloned := n(m[2][1]), n(m[2][2]), n(m[2][4]), n(m[2][5]); calls == 0 || failed != 0 || handed != calls || cloned != 0 {
		t.Errorf("drain (handed off): %s", m[2][0])
	}
	if !regexp.MustCompile(`recovery with snapshots loaded / without: \d+\.\d\d`).MatchString(out) {
		t.Errorf("no ratio of the recoveries:\n%s", out)
	}
}

// runSimFor runs the fleet binary's sim with args (bounded at 50 s),
// fails the test unless it exits 0, and returns its output after checking
// that it matches every regular expression of want.
func runSimFor(t *testing.T, want []string, args ...string) string {
	t.Helper()
	bin := proctest.Build(t, "./examples/fleet")
	p := proctest.Start(t, bin, append(append([]string{"sim"}, args...), "-duration", "50s")...)
	if code := p.Wait(55 * time.Second); code != 0 {
		t.Fatalf("sim exited with %d\n%s", code, p.Output())
	}
	out := p.Output()
	for _, re := range want {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("sim output lacks %q:\n%s", re, out)
		}
	}
	return out
}
