package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The v3.7 client against the Debian 3.4 server: the calls lease/etcd
// makes (a transaction with a nested transaction, leases granted, kept
// alive, revoked, a key attached to a lease, a watch).
func TestSingleMemberClientCalls(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	p := etcdtest.Prefix(t, cli, "etcdtest")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server version %s", st.Version)
	w := cli.Watch(ctx, p, clientv3.WithPrefix())
	lg, err := cli.Grant(ctx, 1)
	if err != nil || lg.TTL != 1 {
		t.Fatalf("Grant(1): %+v %v", lg, err)
	}
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(p+"a"), "=", 0)).
		Then(clientv3.OpPut(p+"a", "1", clientv3.WithLease(lg.ID)),
			clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(p+"b"), "=", "x")}, []clientv3.Op{clientv3.OpDelete(p + "b")}, nil)).
		Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("Txn: %+v %v", resp, err)
	}
	if _, err := cli.KeepAliveOnce(ctx, lg.ID); err != nil {
		t.Fatalf("KeepAliveOnce: %v", err)
	}
	select {
	case ev := <-w:
		if len(ev.Events) != 1 || string(ev.Events[0].Kv.Key) != p+"a" {
			t.Fatalf("watch: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	// The key goes with its lease, within a second and a half.
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, err := cli.Get(ctx, p+"a")
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("key attached to a 1 s lease still there after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cli.KeepAliveOnce(ctx, lg.ID); err == nil {
		t.Fatal("KeepAliveOnce of an expired lease succeeded")
	}
}

// A three-member cluster behind proxies: find the leader, kill it, see
// another elected, restart it from its data dir, restart the whole
// cluster and find the data.
func TestClusterFaults(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithMembers(3), etcdtest.WithProxies())
	cli := etcdtest.Client(t, c.Endpoints()...)
	p := etcdtest.Prefix(t, cli, "etcdtest")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, p+"k", "v"); err != nil {
		t.Fatal(err)
	}
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Kill(); err != nil {
		t.Fatal(err)
	}
	var l2 *etcdtest.Member
	for l2 == nil || l2 == l {
		if ctx.Err() != nil {
			t.Fatal("no new leader")
		}
		l2, _ = c.Leader(ctx)
		time.Sleep(20 * time.Millisecond)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	g, err := cli.Get(ctx, p+"k")
	if err != nil || len(g.Kvs) != 1 || string(g.Kvs[0].Value) != "v" {
		t.Fatalf("after a full restart: %+v %v", g, err)
	}
	// A member whose peer proxy is paused sends nothing to its peers (its
	// raft streams run over connections they dialed to its advertised peer
	// address): a client pinned to it cannot write.
	m := c.Members[0]
	m.PeerProxy().Pause()
	one := etcdtest.Client(t, m.ClientAddr())
	wctx, wcancel := context.WithTimeout(ctx, time.Second)
	_, err = one.Put(wctx, p+"cut", "x")
	wcancel()
	m.PeerProxy().Resume()
	if err == nil {
		t.Fatal("a put through a member whose peer proxy is paused succeeded")
	}
	t.Logf("put through a member whose peer proxy is paused: %v", err)
}
