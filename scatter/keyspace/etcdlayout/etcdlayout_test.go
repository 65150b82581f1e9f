package etcdlayout_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/internal/etcdjson"
	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/scatter/keyspace"
	"github.com/indexkit/indexkit/scatter/keyspace/etcdlayout"
	"github.com/indexkit/indexkit/scatter/keyspace/layouttest"
)

// newStore returns a store under a fresh prefix (whose keys cli deletes
// at the end of the test), talking to the cluster's endpoints, closed at
// the end of the test.
func newStore(t *testing.T, cli *clientv3.Client, eps ...string) *etcdlayout.Store {
	return storeAt(t, etcdtest.Prefix(t, cli, "layout"), eps...)
}

// storeAt is a store of prefix on eps, closed at the end of the test.
func storeAt(t *testing.T, prefix string, eps ...string) *etcdlayout.Store {
	j, err := etcdjson.New(eps, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := etcdlayout.New(j, prefix)
	t.Cleanup(func() { s.Close(); j.Close() })
	return s
}

func TestConformance(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	layouttest.Run(t, func(t *testing.T) keyspace.LayoutStore { return newStore(t, cli, c.Endpoints()...) })
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in     string
		eps    []string
		prefix string
		bad    bool
	}{
		{in: "etcd://127.0.0.1:2379/pool", eps: []string{"http://127.0.0.1:2379"}, prefix: "pool/"},
		{in: "etcd://a:1,b:2/x/y/", eps: []string{"http://a:1", "http://b:2"}, prefix: "x/y/"},
		{in: "etcd://a:1", eps: []string{"http://a:1"}, prefix: "indexkit/keyspace/"},
		{in: "etcd:///p", bad: true},
		{in: "etcd://a:1,,b:2/p", bad: true},
		{in: "layout.json", bad: true},
	} {
		eps, prefix, err := etcdlayout.ParseURL(tc.in)
		if tc.bad {
			if !errors.Is(err, keyspace.ErrInvalidLayout) {
				t.Errorf("ParseURL(%q): err %v, want ErrInvalidLayout", tc.in, err)
			}
			continue
		}
		if err != nil || prefix != tc.prefix || len(eps) != len(tc.eps) || eps[0] != tc.eps[0] || eps[len(eps)-1] != tc.eps[len(eps)-1] {
			t.Errorf("ParseURL(%q) = %v %q %v, want %v %q", tc.in, eps, prefix, err, tc.eps, tc.prefix)
		}
	}
}

// TestPresence: a process's status is under its key while it runs, is
// updated when it changes, and is gone at once when it closes and TTL
// after it dies.
func TestPresence(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	s := newStore(t, cli, c.Endpoints()...)
	ctx := context.Background()
	var epoch atomic.Uint64
	epoch.Store(3)
	status := func() keyspace.Status { return keyspace.Status{Epoch: epoch.Load()} }
	p, err := s.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleQuery, Name: "q1", Status: status, TTL: time.Second, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := s.Statuses(ctx)
	if err != nil || len(sts) != 1 || sts[0].Role != keyspace.RoleQuery || sts[0].Name != "q1" || sts[0].Epoch != 3 {
		t.Fatalf("Statuses = %+v, %v; want q1 at epoch 3", sts, err)
	}
	epoch.Store(4)
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Await(actx, func(sts []keyspace.Status) bool { return len(sts) == 1 && sts[0].Epoch == 4 }); err != nil {
		t.Fatalf("waiting for the status to show epoch 4: %v", err)
	}
	if p.Fenced() {
		t.Fatal("a presence renewing its lease says it is fenced")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if sts, _ := s.Statuses(ctx); len(sts) != 0 {
		t.Fatalf("after Close, Statuses = %+v; want none (the lease revoked)", sts)
	}
}

// A presence writes a milestone (here a copy's end) as soon as it is
// kicked, and progress alone (keys copied) not before Interval, here an
// hour.
func TestPresenceMilestoneAtOnce(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	s := newStore(t, cli, c.Endpoints()...)
	ctx := context.Background()
	var mu sync.Mutex
	task := keyspace.Task{Epoch: 3}
	status := func() keyspace.Status {
		mu.Lock()
		defer mu.Unlock()
		tk := task
		return keyspace.Status{Epoch: 3, Copy: &tk}
	}
	set := func(f func(*keyspace.Task)) {
		mu.Lock()
		f(&task)
		mu.Unlock()
	}
	p, err := s.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleQuery, Name: "q1", Status: status, TTL: 5 * time.Second, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	read := func() keyspace.Task {
		sts, err := s.Statuses(ctx)
		if err != nil || len(sts) != 1 || sts[0].Copy == nil {
			t.Fatalf("Statuses = %+v, %v", sts, err)
		}
		return *sts[0].Copy
	}
	set(func(tk *keyspace.Task) { tk.Keys = 100 })
	p.Kick()
	time.Sleep(300 * time.Millisecond)
	if got := read(); got.Keys != 0 {
		t.Fatalf("progress written before Interval: %+v", got)
	}
	set(func(tk *keyspace.Task) { tk.Keys, tk.Done = 200, true })
	start := time.Now()
	p.Kick()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Await(actx, func(sts []keyspace.Status) bool { return len(sts) == 1 && sts[0].Copy != nil && sts[0].Copy.Done }); err != nil {
		t.Fatalf("the copy's end not written after a kick: %v (etcd holds %+v)", err, read())
	}
	t.Logf("the copy's end in etcd %v after the kick", time.Since(start).Round(time.Millisecond))
}

// TestPresenceFencedWhenCutOff: a process whose renewals do not reach
// etcd says it is fenced no later than its key can expire, and comes
// back once etcd answers again.
func TestPresenceFencedWhenCutOff(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithProxies())
	m := c.Members[0]
	cli := etcdtest.Client(t, c.Endpoints()...)
	s := newStore(t, cli, c.Endpoints()...)
	ctx := context.Background()
	p, err := s.Join(ctx, etcdlayout.PresenceConfig{Role: keyspace.RoleFront, Name: "f1", Status: func() keyspace.Status { return keyspace.Status{Epoch: 1} }, TTL: time.Second, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m.ClientProxy().Pause()
	cut := time.Now()
	for !p.Fenced() {
		if time.Since(cut) > 3*time.Second {
			t.Fatal("a presence cut off from etcd for 3 s (TTL 1 s) does not say it is fenced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fencedAfter := time.Since(cut)
	if fencedAfter > 1100*time.Millisecond {
		t.Fatalf("fenced %v after the cut, later than the 1 s TTL: the key may have expired before", fencedAfter)
	}
	m.ClientProxy().Resume()
	back := time.Now()
	for p.Fenced() {
		if time.Since(back) > 10*time.Second {
			t.Fatal("the presence did not come back within 10 s of etcd answering again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sts, _ := s.Statuses(ctx); len(sts) != 1 {
		t.Fatalf("after coming back, Statuses = %+v; want f1", sts)
	}
	t.Logf("fenced %v after the cut; back %v after etcd answered again", fencedAfter.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}

// TestLeadershipFencesPublish: one campaigner at a time is elected; a
// term that ended cannot publish, and the next campaigner takes over.
func TestLeadershipFencesPublish(t *testing.T) {
	c := etcdtest.Start(t)
	cli := etcdtest.Client(t, c.Endpoints()...)
	s1 := newStore(t, cli, c.Endpoints()...)
	s2 := storeAt(t, s1.Prefix(), c.Endpoints()...)
	ctx := context.Background()
	rev, err := s1.Publish(ctx, 0, layouttest.Layout(3))
	if err != nil {
		t.Fatal(err)
	}
	l1, err := s1.Campaign(ctx, "c1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := s1.Leader(ctx); id != "c1" {
		t.Fatalf("Leader = %q, want c1", id)
	}
	won := make(chan *etcdlayout.Leadership, 1)
	go func() {
		l2, err := s2.Campaign(ctx, "c2", time.Second)
		if err != nil {
			t.Error(err)
		}
		won <- l2
	}()
	select {
	case <-won:
		t.Fatal("a second campaigner was elected while the first's term lasts")
	case <-time.After(300 * time.Millisecond):
	}
	next, _ := layouttest.Layout(3).Join(keyspace.Node{Name: "q9", URL: "http://127.0.0.1:1/q9"})
	if rev, err = l1.Store().Publish(ctx, rev, next); err != nil {
		t.Fatalf("the leader's publish: %v", err)
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var l2 *etcdlayout.Leadership
	select {
	case l2 = <-won:
	case <-time.After(5 * time.Second):
		t.Fatal("the second campaigner was not elected within 5 s of the first resigning")
	}
	after, _ := next.Advance()
	if _, err := l1.Store().Publish(ctx, rev, after); !errors.Is(err, etcdlayout.ErrNotLeader) {
		t.Fatalf("a publish after the term ended: err %v, want ErrNotLeader", err)
	}
	if _, err := l2.Store().Publish(ctx, rev, after); err != nil {
		t.Fatalf("the new leader's publish: %v", err)
	}
	l2.Resign(ctx)
}
