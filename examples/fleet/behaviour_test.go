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
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/fleetnode"
	"github.com/indexkit/indexkit/examples/fleetnode/repogen"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/agent"
)

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
	repos, err := repogen.Generate(ctx, t.TempDir(), 1, repogen.Sizes{Min: 1 << 10, Max: 2 << 10}, 31)
	if err != nil {
		t.Fatal(err)
	}
	tun := tuningFor(kind)
	tun.MaxBids, tun.Window = 5, time.Minute
	store, err := env.b.NewStore(env.prefix, tun.StoreOptions(lease.Hooks{})...)
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
	repos, err := repogen.Generate(ctx, t.TempDir(), 2, repogen.Sizes{Min: 1 << 10, Max: 4 << 10}, 37)
	if err != nil {
		t.Fatal(err)
	}
	e0, e1 := estimate(repos[0]), estimate(repos[1])
	cfg := nodeConfig{Config: fleetnode.Config{Name: "node-a", Prefix: env.prefix, WorkDir: t.TempDir(),
		DrainTimeout: 5 * time.Second, Timing: tuningFor(store).Timing, Autoscale: true, SaturationRounds: 5, ScaleCooldown: time.Hour,
		WrapIndexer: func(x agent.Indexer) agent.Indexer { return sizedIndexer{x} }},
		Budget: byteSize(e0 + e1 - 1), TraceFile: filepath.Join(t.TempDir(), "spans.json")}
	n, tp := startNode(ctx, t, env, cfg)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	cat, err := env.b.NewStore(env.prefix, cfg.StoreOptions(lease.Hooks{})...)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := putCatalog(ctx, env.tab, cat, repos, 1); err != nil {
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
		m = metrics(t, hc, n.Addr())
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
	held := n.Manager().Held()
	if len(held) != 1 {
		t.Fatalf("held %v, want one repo", held)
	}
	q := "marker-" + strings.TrimPrefix(held[0].Item, "repo-")
	if code, _, ref, err := fleetnode.Search(ctx, hc, n.Addr(), held[0].Item, q, 10); err != nil || code != http.StatusOK {
		t.Fatalf("query of the held repo: %d %+v %v", code, ref, err)
	}
	waitFor(t, 5*time.Second, "the last query's time in /metrics", func() (bool, string) {
		m = metrics(t, hc, n.Addr())
		return strings.Contains(m, "indexkit_fleet_last_served_timestamp_seconds ") &&
			!strings.Contains(m, "indexkit_fleet_last_served_timestamp_seconds 0\n"), ""
	})
	// The trace file has a span of each kind.
	if err := tp.ForceFlush(ctx); err != nil {
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
