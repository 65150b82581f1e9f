package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/codeindex"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
)

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
	repos, err := repogen.Generate(ctx, t.TempDir(), 8, repogen.Sizes{Min: 1 << 10, Max: 8 << 10}, 41)
	if err != nil {
		t.Fatal(err)
	}
	tun := tuningFor(kind)
	store, err := env.b.NewStore(env.prefix, tun.StoreOptions(lease.Hooks{})...)
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
		code, res, ref, err := fleetnode.Search(ctx, hc, b.addr, r.ID, q, codeindex.MaxLimit)
		if err != nil || code != http.StatusOK || len(res.Matches) != 1 {
			t.Fatalf("search %s for %q at node-b: %d %+v %+v %v", r.ID, q, code, res, ref, err)
		}
	}
	if left, err := env.tab.Handoffs.List(ctx); err != nil || len(left) != 0 {
		t.Errorf("handoff entries left: %v %v", left, err)
	}
}
