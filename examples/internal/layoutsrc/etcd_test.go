package layoutsrc_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/internal/layoutsrc"
	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/scatter/keyspace/layouttest"
)

// etcdURL is the -layout of prefix on the etcd client address addr
// (http://HOST:PORT or HOST:PORT).
func etcdURL(addr, prefix string) string {
	return "etcd://" + strings.TrimPrefix(addr, "http://") + "/" + prefix
}

// newStore is an etcdlayout store of prefix on eps, closed at the end of
// the test.
func newStore(t *testing.T, prefix string, eps ...string) *etcdlayout.Store {
	j, err := etcdjson.New(eps, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := etcdlayout.New(j, prefix)
	t.Cleanup(func() { st.Close(); j.Close() })
	return st
}

// waitStatus polls the statuses under st until ok holds, for at most 5 s.
func waitStatus(t *testing.T, st *etcdlayout.Store, what string, ok func([]keyspace.Status) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		sts, err := st.Statuses(context.Background())
		if err == nil && ok(sts) {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("waited 5 s for %s; Statuses = %+v, %v", what, sts, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An etcd source: a URL that does not parse is refused, Load says when
// nothing was published, a layout etcdlayout publishes is what Load and
// Follow see, and a presence is one of the store's Statuses, updated
// when the status changes and gone at Close.
func TestEtcdSource(t *testing.T) {
	if _, err := layoutsrc.Open("etcd:///p"); !errors.Is(err, keyspace.ErrInvalidLayout) {
		t.Errorf("Open of an etcd URL without a host: %v, want ErrInvalidLayout", err)
	}
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "layoutsrc")
	st := newStore(t, prefix, c.Endpoints()...)
	src, err := layoutsrc.Open(etcdURL(c.Endpoints()[0], prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := t.Context()
	if _, err := src.Load(ctx); !errors.Is(err, etcdlayout.ErrNoLayout) {
		t.Fatalf("Load before a publish: %v, want ErrNoLayout", err)
	}
	l := layouttest.Layout(3)
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := src.Load(ctx); err != nil || got.Epoch != 1 {
		t.Fatalf("Load = epoch %d, %v; want 1", got.Epoch, err)
	}
	var applied atomic.Uint64
	fctx, stop := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		followed <- src.Follow(fctx, 0, nil, func(l keyspace.Layout) error { applied.Store(l.Epoch); return nil }, nil)
	}()
	p, err := src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleQuery, Name: "q1", TTL: time.Second,
		Status: func() keyspace.Status { return keyspace.Status{Epoch: applied.Load()} }})
	if err != nil {
		t.Fatal(err)
	}
	next, _ := l.Join(keyspace.Node{Name: "q9", URL: "http://127.0.0.1:1/q9"})
	if _, err := st.Publish(ctx, rev, next); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, st, "q1 at epoch 2", func(sts []keyspace.Status) bool {
		return len(sts) == 1 && sts[0].Role == keyspace.RoleQuery && sts[0].Name == "q1" && sts[0].Epoch == 2
	})
	if p.Fenced() {
		t.Error("a presence renewing its lease says it is fenced")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if sts, err := st.Statuses(ctx); err != nil || len(sts) != 0 {
		t.Fatalf("after Close, Statuses = %+v, %v; want none", sts, err)
	}
	stop()
	if err := <-followed; err != nil {
		t.Fatalf("Follow: %v", err)
	}
}

// A fence holds while the presence is cut off from etcd and, once it is
// back, until the layout in force (published meanwhile) has been applied:
// the fence reads it from etcd itself, for a watch that has not caught up
// (here there is no watch at all).
func TestFenceLiftsAtTheLayoutInForce(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithProxies())
	m := c.Members[0]
	cli := etcdtest.Client(t, "http://"+m.DirectClientAddr())
	prefix := etcdtest.Prefix(t, cli, "fence")
	st := newStore(t, prefix, []string{"http://" + m.DirectClientAddr()}...)
	ctx := t.Context()
	l := layouttest.Layout(2)
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	src, err := layoutsrc.Open(etcdURL(m.ClientAddr(), prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var applied atomic.Uint64
	applied.Store(1)
	p, err := src.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleFront, Name: "f1", TTL: time.Second,
		Status: func() keyspace.Status { return keyspace.Status{Epoch: applied.Load()} }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f := layoutsrc.NewFence(src, p, func(l keyspace.Layout) error { applied.Store(l.Epoch); return nil }, nil)
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- f.Run(rctx) }()
	defer func() {
		stop()
		<-ran
	}()
	if f.Fenced() {
		t.Fatal("fenced at the start")
	}
	m.ClientProxy().Pause()
	cut := time.Now()
	next, _ := l.Join(keyspace.Node{Name: "q9", URL: "http://127.0.0.1:1/q9"})
	if _, err := st.Publish(ctx, rev, next); err != nil {
		t.Fatal(err)
	}
	for !f.Fenced() {
		if time.Since(cut) > 3*time.Second {
			t.Fatal("cut off for 3 s (TTL 1 s), not fenced")
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.ClientProxy().Resume()
	back := time.Now()
	for f.Fenced() {
		if time.Since(back) > 10*time.Second {
			t.Fatal("still fenced 10 s after etcd answers again")
		}
		time.Sleep(time.Millisecond)
	}
	if got := applied.Load(); got != 2 {
		t.Fatalf("the fence lifted at epoch %d; the layout in force is 2", got)
	}
}

// The indexer and the query node as real processes with an etcd
// -layout: each one's status key (its role, its name) shows each epoch
// published, and when it is SIGKILLed the key is gone within its TTL.
func TestProcesses(t *testing.T) {
	const ttl = time.Second
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	for _, tc := range []struct {
		role, name, pkg string
		args            func(dir, url string) []string
	}{
		{keyspace.RoleIngest, "ingest-0", "examples/indexer", func(dir, url string) []string {
			return []string{"-dir", dir, "-find", "127.0.0.1:0", "-ingest", "127.0.0.1:0", "-admin", "127.0.0.1:0",
				"-metrics", "", "-p2p", "none", "-log-level", "debug",
				"-layout", url, "-shard-name", "ingest-0", "-shard-presence-ttl", ttl.String()}
		}},
		{keyspace.RoleQuery, "query-0", "examples/query", func(dir, url string) []string {
			return []string{"-dir", dir, "-listen", "127.0.0.1:0", "-store", "memory", "-log-level", "debug",
				"-layout", url, "-name", "query-0", "-presence-ttl", ttl.String()}
		}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			prefix := etcdtest.Prefix(t, cli, tc.role)
			st := newStore(t, prefix, c.Endpoints()...)
			ctx := t.Context()
			l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
				Nodes:   []keyspace.Node{{Name: "query-0", URL: "http://127.0.0.1:1"}}, // nothing serves it: batches wait
				Current: []string{"query-0"}, Writers: []string{"ingest-0"}}
			rev, err := st.Publish(ctx, 0, l)
			if err != nil {
				t.Fatal(err)
			}
			bin := proctest.Build(t, "github.com/indexkit/indexkit/"+tc.pkg)
			p := proctest.Start(t, bin, tc.args(filepath.Join(t.TempDir(), tc.name), etcdURL(c.Endpoints()[0], prefix))...)
			p.WaitMsg("starting")
			at := func(epoch uint64) func([]keyspace.Status) bool {
				return func(sts []keyspace.Status) bool {
					return len(sts) == 1 && sts[0].Role == tc.role && sts[0].Name == tc.name && sts[0].Epoch == epoch
				}
			}
			waitStatus(t, st, tc.name+" at epoch 1", at(1))
			l.Epoch = 2
			if _, err := st.Publish(ctx, rev, l); err != nil {
				t.Fatal(err)
			}
			took := waitStatus(t, st, tc.name+" at epoch 2", at(2))
			t.Logf("publish of epoch 2 to the %s process's key showing it: %v", tc.role, took.Round(time.Millisecond))
			p.Signal(syscall.SIGKILL)
			gone := waitStatus(t, st, "the key of the killed process to expire", func(sts []keyspace.Status) bool { return len(sts) == 0 })
			if gone > ttl+time.Second {
				t.Errorf("the key expired %v after SIGKILL; TTL %v", gone, ttl)
			}
			t.Logf("key gone %v after SIGKILL (TTL %v)", gone.Round(time.Millisecond), ttl)
		})
	}
}
