package querynode_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/querynode"
	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
)

// With an etcd layout the node follows the store's watch (no LayoutPoll,
// no ReloadLayout): its status key shows each epoch published, and the
// key is gone as soon as Run has returned.
func TestEtcdLayout(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	prefix := etcdtest.Prefix(t, cli, "querynode")
	j, err := etcdjson.New(c.Endpoints(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	st := etcdlayout.New(j, prefix)
	defer st.Close()
	ctx := t.Context()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := keyspace.Layout{Epoch: 1, Replication: 1, Phase: keyspace.PhaseStable,
		Nodes: []keyspace.Node{{Name: "q1", URL: "http://" + ln.Addr().String()}}, Current: []string{"q1"}}
	rev, err := st.Publish(ctx, 0, l)
	if err != nil {
		t.Fatal(err)
	}
	cfg := querynode.DefaultConfig()
	cfg.Dir, cfg.Name, cfg.Store, cfg.PresenceTTL = filepath.Join(t.TempDir(), "q1"), "q1", "memory", time.Second
	cfg.Layout = "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://") + "/" + prefix
	n, err := querynode.New(cfg, ln)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()

	waitEpoch := func(want uint64) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			sts, err := st.Statuses(ctx)
			if err == nil && len(sts) == 1 && sts[0].Role == keyspace.RoleQuery && sts[0].Name == "q1" && sts[0].Epoch == want {
				return time.Since(start)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("5 s on, Statuses = %+v, %v; want q1 at epoch %d", sts, err, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitEpoch(1)
	l.Epoch = 2
	if _, err := st.Publish(ctx, rev, l); err != nil {
		t.Fatal(err)
	}
	took := waitEpoch(2)
	if got := n.Shard().Layout().Epoch; got != 2 {
		t.Fatalf("the node runs epoch %d, its status says 2", got)
	}
	t.Logf("publish of epoch 2 to the node's status showing it: %v", took.Round(time.Millisecond))

	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if sts, err := st.Statuses(ctx); err != nil || len(sts) != 0 {
		t.Fatalf("after Run returned, Statuses = %+v, %v; want none (the lease revoked)", sts, err)
	}
}
