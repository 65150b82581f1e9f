package main

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/poll"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
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

// waitFor is poll.Until: cond every 50 ms until it holds, failing the
// test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, d, what, cond)
}

// testEnv is a store for a test: its flags, a fresh key prefix whose keys
// are deleted at the end, a connection, and the side tables.
type testEnv struct {
	sf     storeFlags
	prefix string
	b      *backend
	tab    fleetnode.Tables
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
	e.b, e.tab = b, b.Tables(e.prefix)
	return e
}

// args returns a fleet command line: cmd and its flags, then the store's
// flags and -prefix.
func (e testEnv) args(cmd ...string) []string {
	return append(append(cmd, e.sf.args()...), "-prefix", e.prefix)
}

// tuningFor is e2eTuning, with the liveness window whole seconds on etcd.
func tuningFor(kind string) tuning {
	t := e2eTuning()
	if kind == storeEtcd {
		t.Liveness = 2 * time.Second
	}
	return t
}

// startNode runs a node in the test process as `fleet node` builds it
// (assemble: its metrics, its trace file), on a loopback listener, until
// the test ends; it returns the node and its tracer provider (nil without
// cfg.TraceFile).
func startNode(ctx context.Context, t *testing.T, env testEnv, cfg nodeConfig) (*fleetnode.Node, *sdktrace.TracerProvider) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Config.Budget = int64(cfg.Budget)
	n, tp, done, err := assemble(cfg, env.b, ln)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	exited := make(chan error, 1)
	go func() { exited <- n.Run(rctx) }()
	waitFor(t, 5*time.Second, "the node's address published", func() (bool, string) {
		a, err := env.tab.Addrs.Get(ctx, cfg.Name)
		return err == nil && a == n.Addr(), ""
	})
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("Run %s: %v", cfg.Name, err)
		}
		done()
	})
	return n, tp
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
