package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
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

// e2eTuning is fast: a node lost by SIGKILL is replaced within about
// TTL + window + a reindex.
func e2eTuning() tuning {
	t := defaultTuning()
	t.TTL, t.Window, t.Liveness, t.Heartbeat, t.Scan = 3*time.Second, time.Second, 1500*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond
	t.BackoffBase, t.BackoffMax = 50*time.Millisecond, 500*time.Millisecond
	return t
}

type testNode struct {
	name string
	addr string
	p    *proctest.Proc
}

// TestFleet runs 3 node processes over 10 repos against a real Redis:
// every repo becomes owned and ready, a query sent to a non-owner is
// routed and answers as grep does, a SIGKILLed node's repos are re-won
// and answered again, and SIGTERM releases the leases.
func TestFleet(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeRedis)
	prefix := env.prefix
	bin := proctest.Build(t, "./examples/fleet")
	ctx := context.Background()

	repos, err := repogen.Generate(ctx, t.TempDir(), 10, repogen.Sizes{Min: 1 << 10, Max: 8 << 10}, 11)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]repogen.Repo{}
	for _, r := range repos {
		byID[r.ID] = r
	}
	tun := e2eTuning()
	store, err := env.b.NewStore(prefix, tun.StoreOptions(lease.Hooks{})...)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	work := t.TempDir()
	var nodes []*testNode
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		args := append(env.args("node", "-name", name, "-budget", "64MiB",
			"-work-dir", work, "-log-level", "debug", "-drain-timeout", "5s"), tun.args()...)
		p := proctest.Start(t, bin, args...)
		nodes = append(nodes, &testNode{name: name, p: p})
	}
	for _, n := range nodes {
		n.addr = n.p.Addr("http")
		n.p.WaitMsg("starting")
	}
	if err := putCatalog(ctx, env.tab, store, repos, 1); err != nil {
		t.Fatal(err)
	}

	rows := func() map[string]lease.Row {
		out := map[string]lease.Row{}
		for r, err := range store.Rows(ctx) {
			if err != nil {
				t.Fatalf("rows: %v", err)
			}
			if _, ok := byID[r.ID]; ok {
				out[r.ID] = r
			}
		}
		return out
	}
	covered := func(dead string) func() (bool, string) {
		return func() (bool, string) {
			rs := rows()
			ready, warming, unassigned := coverage(mapValues(rs), map[string]bool{dead: true})
			return ready == len(repos), fmt.Sprintf("ready %d, warming %d, unassigned %d", ready, warming, unassigned)
		}
	}
	start := time.Now()
	waitFor(t, 30*time.Second, "every repo owned and ready", covered(""))
	t.Logf("10 repos owned and ready after %v", time.Since(start).Round(time.Millisecond))

	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(5, 5))
	// checkRouted queries every repo through a live node that does not own
	// it and compares the answer with grep over the repo's files.
	checkRouted := func(live []*testNode) {
		t.Helper()
		rs := rows()
		for _, r := range repos {
			owner := rs[r.ID].Owner
			var via *testNode
			for _, n := range live {
				if n.name != owner {
					via = n
					break
				}
			}
			for _, q := range []string{fmt.Sprintf("marker-%s", strings.TrimPrefix(r.ID, "repo-")), pickPhrase(rng, r.Files), "ka"} {
				code, res, ref, err := fleetnode.Search(ctx, hc, via.addr, r.ID, q, codeindex.MaxLimit)
				if err != nil || code != http.StatusOK {
					t.Fatalf("search %s for %q via %s (owner %s): %d %+v %v", r.ID, q, via.name, owner, code, ref, err)
				}
				want := codeindex.Grep(indexFiles(r.Files), q)
				if len(want) > codeindex.MaxLimit {
					want = want[:codeindex.MaxLimit]
				}
				if !reflect.DeepEqual(res.Matches, want) && !(len(want) == 0 && len(res.Matches) == 0) {
					t.Fatalf("search %s for %q: %d matches, grep finds %d", r.ID, q, len(res.Matches), len(want))
				}
				if res.ServedBy != owner || res.RoutedBy != via.name || res.Commit != r.Commit {
					t.Fatalf("search %s via %s: served_by %q routed_by %q commit %s; want owner %s, commit %s",
						r.ID, via.name, res.ServedBy, res.RoutedBy, res.Commit, owner, r.Commit)
				}
			}
		}
	}
	checkRouted(nodes)

	// Refusals.
	for _, tc := range []struct {
		repo, q string
		limit   int
		code    int
		status  string
	}{
		{"no-such-repo", "abc", 10, http.StatusNotFound, "unknown"},
		{repos[0].ID, "", 10, http.StatusBadRequest, "bad query"},
		{repos[0].ID, "a\nb", 10, http.StatusBadRequest, "bad query"},
		{repos[0].ID, "abc", codeindex.MaxLimit + 1, http.StatusBadRequest, "bad query"},
		{"", "abc", 10, http.StatusBadRequest, "bad query"},
	} {
		code, _, ref, err := fleetnode.Search(ctx, hc, nodes[0].addr, tc.repo, tc.q, tc.limit)
		if err != nil || code != tc.code || ref == nil || ref.Status != tc.status {
			t.Errorf("search %q %q limit %d: %d %+v %v; want %d %s", tc.repo, tc.q, tc.limit, code, ref, err, tc.code, tc.status)
		}
	}

	// An unassigned repo: in the catalog, nobody may bid on it (its
	// minimum bid is above every budget). rows leaves it out.
	big := lease.Item{ID: "repo-huge", Commit: repos[0].Commit, Size: 1 << 40, MinBid: 1 << 40}
	if err := store.Put(ctx, big); err != nil {
		t.Fatal(err)
	}
	if code, _, ref, err := fleetnode.Search(ctx, hc, nodes[0].addr, big.ID, "abc", 1); err != nil || code != http.StatusServiceUnavailable || ref.Status != "unassigned" {
		t.Errorf("search of an unleased repo: %d %+v %v; want 503 unassigned", code, ref, err)
	}

	// The status of each node lists what it holds.
	held := map[string]int{}
	for _, r := range rows() {
		held[r.Owner]++
	}
	for _, n := range nodes {
		st := getStatus(t, hc, n.addr)
		ready := 0
		for _, it := range st.Items {
			if it.Ready {
				ready++
			}
		}
		if st.Node != n.name || len(st.Items) != held[n.name] || ready != held[n.name] || st.Used <= 0 && held[n.name] > 0 {
			t.Errorf("status of %s: node %s, %d items (%d ready), used %d; the catalog says it holds %d",
				n.name, st.Node, len(st.Items), ready, st.Used, held[n.name])
		}
	}

	// SIGKILL the node holding the most: its repos are re-won by the
	// others within TTL + window + slack.
	victim := nodes[0]
	for _, n := range nodes {
		if held[n.name] > held[victim.name] {
			victim = n
		}
	}
	var lostItems []string
	for id, r := range rows() {
		if r.Owner == victim.name {
			lostItems = append(lostItems, id)
		}
	}
	killed := time.Now()
	victim.p.Signal(syscall.SIGKILL)
	victim.p.Wait(10 * time.Second)
	var live []*testNode
	for _, n := range nodes {
		if n != victim {
			live = append(live, n)
		}
	}
	// During the TTL the row still names the dead owner: a query through
	// a survivor cannot reach it.
	if len(lostItems) > 0 {
		code, _, ref, err := fleetnode.Search(ctx, hc, live[0].addr, lostItems[0], "abc", 1)
		if err != nil || code != http.StatusServiceUnavailable {
			t.Errorf("search of a dead owner's repo: %d %+v %v; want 503", code, ref, err)
		}
	}
	bound := tun.TTL + tun.Window + 15*time.Second
	waitFor(t, bound, "the killed node's repos to be re-won and ready", covered(victim.name))
	t.Logf("%s held %d repos; all ready again %v after SIGKILL", victim.name, len(lostItems), time.Since(killed).Round(time.Millisecond))
	rs := rows()
	for _, id := range lostItems {
		if o := rs[id].Owner; o == victim.name || o == "" {
			t.Errorf("%s still owned by %q", id, o)
		}
	}
	checkRouted(live)

	// SIGTERM: the survivors drain and release; no row is left leased.
	for _, n := range live {
		n.p.Signal(syscall.SIGTERM)
	}
	for _, n := range live {
		if code := n.p.Wait(20 * time.Second); code != 0 {
			t.Fatalf("%s exited with %d after SIGTERM\n%s", n.name, code, n.p.Output())
		}
	}
	// Checked at once: leases left to expire would still show for up to
	// the TTL.
	for id, r := range rows() {
		if r.Owner != "" || r.State != lease.Idle || r.Ready {
			t.Errorf("after SIGTERM %s: owner %q state %v ready %v; want released", id, r.Owner, r.State, r.Ready)
		}
	}
	if addrs, err := env.tab.Addrs.List(ctx); err != nil || len(addrs) != 1 { // the killed node's stays
		t.Errorf("published addresses after shutdown: %v %v, want 1 (the killed node's)", addrs, err)
	}
}

// TestDemo runs `fleet demo` small and checks its report.
func TestDemo(t *testing.T) {
	t.Parallel()
	needGit(t)
	addr, prefix := testRedis(t)
	bin := proctest.Build(t, "./examples/fleet")
	p := proctest.Start(t, bin, "demo", "-redis", addr, "-prefix", prefix, "-repos", "12", "-duration", "90s")
	if code := p.Wait(100 * time.Second); code != 0 {
		t.Fatalf("demo exited with %d\n%s", code, p.Output())
	}
	out := p.Output()
	for _, want := range []string{"all 12 catalog rows (12 repos × 1 copies) owned and ready", "routed_by=", "grep finds", "→ 404 unknown", "after shutdown: 12/12 rows idle"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func getStatus(t *testing.T, hc *http.Client, addr string) fleetnode.Status {
	t.Helper()
	c := &child{Name: addr, Addr: addr}
	st, err := c.status(context.Background(), hc)
	if err != nil {
		t.Fatalf("status of %s: %v", addr, err)
	}
	return st
}

func mapValues(m map[string]lease.Row) []lease.Row {
	out := make([]lease.Row, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// TestFleetReplicas runs 3 nodes over 3 repos with 2 copies each: when the
// primary's owner is killed, a query through the third node is answered
// by the replica at once, before the lease lapses.
func TestFleetReplicas(t *testing.T) {
	t.Parallel()
	needGit(t)
	env := testStore(t, storeRedis)
	prefix := env.prefix
	bin := proctest.Build(t, "./examples/fleet")
	ctx := context.Background()
	repos, err := repogen.Generate(ctx, t.TempDir(), 3, repogen.Sizes{Min: 1 << 10, Max: 4 << 10}, 13)
	if err != nil {
		t.Fatal(err)
	}
	tun := e2eTuning()
	tun.TTL, tun.Replicas = 20*time.Second, 2 // the dead primary stays in the catalog for the whole test
	store, err := env.b.NewStore(prefix, tun.StoreOptions(lease.Hooks{})...)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	nodes := map[string]*testNode{}
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		args := append(env.args("node", "-name", name, "-budget", "64MiB",
			"-work-dir", t.TempDir(), "-drain-timeout", "5s"), tun.args()...)
		nodes[name] = &testNode{name: name, p: proctest.Start(t, bin, args...)}
	}
	for _, n := range nodes {
		n.addr = n.p.Addr("http")
	}
	if err := putCatalog(ctx, env.tab, store, repos, 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every copy owned and ready", func() (bool, string) {
		var rows []lease.Row
		for r, err := range store.Rows(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		ready, warming, unassigned := coverage(rows, nil)
		return ready == 2*len(repos), fmt.Sprintf("ready %d, warming %d, unassigned %d", ready, warming, unassigned)
	})
	r := repos[0]
	rows, err := lease.Replicas(ctx, store, r.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	primary, replica := rows[0].Owner, rows[1].Owner
	if primary == replica {
		t.Fatalf("both copies of %s on %s", r.ID, primary)
	}
	var third string
	for name := range nodes {
		if name != primary && name != replica {
			third = name
		}
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
	if _, res, ref, err := fleetnode.Search(ctx, hc, nodes[third].addr, r.ID, q, 10); err != nil || res == nil || res.ServedBy != primary {
		t.Fatalf("before the kill: %+v %+v %v; want served by the primary %s", res, ref, err, primary)
	}
	nodes[primary].p.Signal(syscall.SIGKILL)
	nodes[primary].p.Wait(10 * time.Second)
	code, res, ref, err := fleetnode.Search(ctx, hc, nodes[third].addr, r.ID, q, 10)
	if err != nil || code != http.StatusOK || res.ServedBy != replica || len(res.Matches) != 1 {
		t.Fatalf("after killing the primary %s: %d %+v %+v %v; want served by the replica %s", primary, code, res, ref, err, replica)
	}
	if row, _ := store.Get(ctx, r.ID); row.Owner != primary {
		t.Fatalf("the primary's lease moved to %q already; the test wants it still held by the dead %s", row.Owner, primary)
	}
}
