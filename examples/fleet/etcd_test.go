package main

import (
	"io"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/examples/internal/etcdserver"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
)

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
