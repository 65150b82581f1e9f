package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
)

// TestSideTables runs the table contract on both stores: Set, Get, List
// over more entries than a page and an etcd transaction hold, Delete,
// Clear, and a missing key's errNoEntry; on etcd the keys are where
// doc.go says.
func TestSideTables(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{storeRedis, storeEtcd} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := testStore(t, kind)
			ctx := context.Background()
			want := map[string]string{}
			for i := range 2*pageSize + 7 {
				want[fmt.Sprintf("node-%04d", i)] = fmt.Sprintf("127.0.0.1:%d", 10000+i)
			}
			if err := env.tab.addrs.Set(ctx, want); err != nil {
				t.Fatal(err)
			}
			if got, err := env.tab.addrs.Get(ctx, "node-0300"); err != nil || got != want["node-0300"] {
				t.Fatalf("Get node-0300 = %q, %v; want %q", got, err, want["node-0300"])
			}
			got, err := env.tab.addrs.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("List: %d entries, want %d (equal: false)", len(got), len(want))
			}
			if _, err := env.tab.repos.Get(ctx, "node-0001"); !errors.Is(err, errNoEntry) {
				t.Fatalf("Get in another table: %v, want errNoEntry", err)
			}
			if err := env.tab.addrs.Delete(ctx, "node-0001", "node-0002", "no-such"); err != nil {
				t.Fatal(err)
			}
			if _, err := env.tab.addrs.Get(ctx, "node-0001"); !errors.Is(err, errNoEntry) {
				t.Fatalf("Get after Delete: %v, want errNoEntry", err)
			}
			if got, _ := env.tab.addrs.List(ctx); len(got) != len(want)-2 {
				t.Fatalf("List after Delete: %d entries, want %d", len(got), len(want)-2)
			}
			if err := env.tab.settings.Set(ctx, map[string]string{maxBidsField: "3"}); err != nil {
				t.Fatal(err)
			}
			if kind == storeEtcd {
				resp, err := env.b.etcd.Get(ctx, env.prefix+"fleet/settings/max-bids")
				if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "3" {
					t.Fatalf("etcd key %sfleet/settings/max-bids: %+v %v; want 3", env.prefix, resp, err)
				}
				resp, err = env.b.etcd.Get(ctx, env.prefix+"fleet/addrs/node-0300")
				if err != nil || len(resp.Kvs) != 1 {
					t.Fatalf("etcd key %sfleet/addrs/node-0300: %+v %v", env.prefix, resp, err)
				}
			}
			if err := env.tab.addrs.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := env.tab.addrs.List(ctx); err != nil || len(got) != 0 {
				t.Fatalf("List after Clear: %d entries, %v", len(got), err)
			}
			if v, err := env.tab.settings.Get(ctx, maxBidsField); err != nil || v != "3" {
				t.Fatalf("settings after clearing addrs: %q %v", v, err)
			}
		})
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
	repos, err := generateRepos(ctx, t.TempDir(), 1, sizeRange{1 << 10, 4 << 10}, 41)
	if err != nil {
		t.Fatal(err)
	}
	r := repos[0]
	nodes := map[string]*node{}
	for _, name := range []string{"node-a", "node-b"} {
		cfg := nodeConfig{Name: name, storeFlags: env.sf, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(),
			DrainTimeout: 5 * time.Second, tuning: tuningFor(storeEtcd)}
		nodes[name] = startNode(ctx, t, env, cfg, nil, nil)
	}
	if err := putCatalog(ctx, env.tab, nodes["node-a"].store, repos, 1); err != nil {
		t.Fatal(err)
	}
	store := nodes["node-a"].store
	waitFor(t, 20*time.Second, "the repo owned and ready", func() (bool, string) {
		row, err := store.Get(ctx, r.ID)
		return err == nil && row.Owner != "" && row.Ready, fmt.Sprintf("%+v %v", row, err)
	})
	row, _ := store.Get(ctx, r.ID)
	via := nodes["node-a"]
	if row.Owner == via.cfg.Name {
		via = nodes["node-b"]
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	q := "marker-" + strings.TrimPrefix(r.ID, "repo-")
	code, res, ref, err := search(ctx, hc, via.addr, r.ID, q, 10)
	if err != nil || code != http.StatusOK || res.ServedBy != row.Owner || res.RoutedBy != via.cfg.Name || len(res.Matches) != 1 {
		t.Fatalf("GET %s/search?repo=%s&q=%s: %d %+v %+v %v; want 200 served by %s, routed by %s, 1 match",
			via.cfg.Name, r.ID, q, code, res, ref, err, row.Owner, via.cfg.Name)
	}
}

// TestEtcdFlags checks that -store etcd refuses timings lease/etcd cannot
// keep and address flags of the other store, with errors that name them.
func TestEtcdFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-store", "etcd", "-window", "500ms"}, "-window 500ms is not a whole number of seconds"},
		{[]string{"-store", "etcd", "-ttl", "2500ms"}, "-ttl 2.5s is not a whole number of seconds"},
		{[]string{"-store", "etcd", "-liveness", "1500ms"}, "-liveness 1.5s is not a whole number of seconds"},
		{[]string{"-etcd", "127.0.0.1:2379"}, "-etcd is given but -store is redis"},
		{[]string{"-store", "etcd", "-redis", "127.0.0.1:6379"}, "-redis is given but -store is etcd"},
		{[]string{"-store", "consul"}, `-store "consul": want redis or etcd`},
		{[]string{"-store", "etcd", "-etcd-members", "0"}, "-etcd-members 0"},
	} {
		ff := simFlags()
		err := ff.parse("sim", c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sim %v: %v; want an error containing %q", c.args, err, c.want)
		}
		if strings.Contains(c.want, "-etcd-members") {
			continue
		}
		if _, err := parseNodeFlags(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("node %v: %v; want an error containing %q", c.args, err, c.want)
		}
	}
	for _, args := range [][]string{{"-store", "etcd"}, {"-store", "etcd", "-etcd-members", "3"}} {
		ff := simFlags()
		if err := ff.parse("sim", args, io.Discard); err != nil {
			t.Errorf("sim %v: %v; the defaults must suit etcd", args, err)
		}
		df := demoFlags()
		if err := df.parse("demo", args[:2], io.Discard); err != nil {
			t.Errorf("demo %v: %v; the defaults must suit etcd", args[:2], err)
		}
	}
}

// TestSimEtcd runs `fleet sim -store etcd` small, on an etcd it starts
// itself: 3 nodes, 20 repos and one row too large for every budget, one
// node SIGKILLed; the report shows full coverage before and after the
// kill, and every row idle after the survivors' SIGTERM.
func TestSimEtcd(t *testing.T) {
	t.Parallel()
	needGit(t)
	if _, err := etcdserver.Binary(); err != nil {
		etcdtest.Unavailable(t, "%v", err) // fails under CI, skips otherwise
	}
	out := runSimFor(t, []string{
		`etcd started: 1 member\(s\) on 127\.0\.0\.1:\d+ \(pids \[\d+\]\)`,
		`full coverage: 20/20 repos ready after`,
		`SIGKILL node-\w \(pid \d+\), which held \d+ repos`,
		`full coverage again after`,
		`steady state: the etcd server handled [1-9]\d* requests/s over 1s, \d+ per node`,
		`huge-0000 needs [\d.]+ MiB; reported by 3/3 nodes`,
		`after SIGTERM of the survivors: 21/21 rows idle`,
	}, "-store", "etcd", "-nodes", "3", "-repos", "20",
		"-max-size", "16KiB", "-ttl", "2s", "-liveness", "1s", "-heartbeat", "250ms", "-window", "1s",
		"-oversize", "1", "-steady", "1s")
	checkRehydration(t, out)
}

// A node whose store cannot be made (here etcd refuses a liveness window
// that is not whole seconds) fails with that error, and cleans up
// without calling Close on a store it never had.
func TestNewNodeStoreErrorOnEtcd(t *testing.T) {
	t.Parallel()
	env := testStore(t, storeEtcd)
	tun := tuningFor(storeEtcd)
	tun.Liveness = 1500 * time.Millisecond
	cfg := nodeConfig{Name: "node-a", storeFlags: env.sf, Prefix: env.prefix, Budget: 64 << 20, WorkDir: t.TempDir(), tuning: tun}
	_, err := newNode(cfg, slog.New(slog.DiscardHandler), env.b, nil)
	if err == nil || !strings.Contains(err.Error(), "whole number of seconds") {
		t.Fatalf("newNode with a 1.5s liveness on etcd: %v, want etcd's refusal", err)
	}
}
