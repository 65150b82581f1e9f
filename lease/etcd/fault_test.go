package etcd_test

// Fault tests on a three-member etcd cluster with real processes. Each
// test runs its own cluster (internal/testbed/etcdtest, 10 ms heartbeat, 100 ms
// election timeout), a fenced register (an HTTP server in the test
// process, outside the lease store, that accepts a write only if
// lease.CheckFence passes against the highest fence it accepted for the
// item, and logs every write), and three owner processes: this test
// binary re-executed (see fault_owner_test.go), each with its own etcd
// client. An owner competes for three items (one goroutine per item): it
// bids (its free memory less what it holds) and evaluates until it wins,
// acquires the lease, renews it every TTL/4 and, every 100 ms while the
// lease is valid by its own clock, writes the register. When Done closes
// it stops writing; then, as a zombie, once the register has accepted a
// newer fence for the item, it writes once more with the lost fence and
// renews the lost Ref at the store. TTL 2 s, window 1 s, margin 200 ms.
//
//   - TestFaultLeaderKilled: SIGKILL of the etcd leader while the owners
//     bid in the first auctions, and again, once every item is held and
//     renewed, during renewals; the killed member is started again each
//     time.
//   - TestFaultPartition: the owner a is pinned to the leader, b and c to
//     the two others, all through proxies. Once a holds items, the
//     leader's peer proxy and client proxy are paused (it can neither
//     lead nor commit, and a's requests go nowhere) until b or c has
//     taken over every item of a's; then both are resumed.
//   - TestFaultClusterRestart: while the owners hold every item, all
//     three members are killed, kept down for longer than the TTL (every
//     holder's lease lapses by its own clock), and started again on their
//     data directories; the holder of item-0 is killed with them. etcd
//     restarts every lease's TTL when a leader is elected, so a grant
//     outlives the outage: a surviving holder finds it still its own
//     (ErrLeased, then the row) and takes it up again with the same
//     fence, while the dead owner's items are granted again, one TTL
//     after the restart, with greater fences.
//
// Assertions come from the register's log and the owners' logs
// (faultEnv.check; the zombie's renewal is the one answer of the store
// checked, as its owner reported it): no fence acquired by two nodes and
// fences increasing with grant time; the register's accepted fences never
// go down and no fence's writes come from two nodes; no zombie write
// accepted (zero writes accepted with a stale fence) and every zombie
// renewal refused; no acknowledged write missing; and no owner held an
// item, by its own clock, at or after a later grant of it. Every test also bounds how long the items go
// without a holder: after the fault (from the kill, the partition, the
// restart), every item has an accepted register write within
// regrantBound(n) (TTL + 0.5 s + a window per item to auction + 3 s: 8.5 s
// for three items), and the n items the partitioned owner held, or the
// owner killed with the cluster, are written within regrantBound(n) with
// a fence above every fence before.

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/lease"
)

// faultParent runs the owner process and returns false when the test
// binary was started as one; otherwise it skips the test under -short,
// marks it parallel and returns true.
func faultParent(t *testing.T) bool {
	if runOwnerIfChild(t) {
		return false
	}
	lane.Integration(t, "fault tests run etcd clusters and processes for seconds")
	if etcdtest.Binary() == "" {
		etcdtest.Unavailable(t, "etcd binary not found (install etcd-server or set ETCD_BIN)")
	}
	t.Parallel()
	return true
}

// killLeader kills the cluster's leader (SIGKILL) and returns it and when.
func (e *faultEnv) killLeader() (*etcdtest.Member, time.Time) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	m, err := e.c.Leader(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := m.Kill(); err != nil {
		e.t.Fatal(err)
	}
	return m, time.Now()
}

// restart starts m again on its data directory and waits until the
// cluster is healthy.
func (e *faultEnv) restart(m *etcdtest.Member) {
	e.t.Helper()
	if err := m.Start(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.WaitReady(); err != nil {
		e.t.Fatal(err)
	}
}

// lostSince returns the leases (item -> fence) owners reported lost at or
// after since.
func (e *faultEnv) lostSince(since time.Time) map[string]lease.Fence {
	out := make(map[string]lease.Fence)
	for _, o := range e.owners {
		for _, f := range o.events("lost") {
			if num(e.t, f, "at_us") >= since.UnixMicro() {
				out[f["item"]] = max(out[f["item"]], fenceOf(e.t, f))
			}
		}
	}
	return out
}

func TestFaultLeaderKilled(t *testing.T) {
	if !faultParent(t) {
		return
	}
	e := newFaultEnv(t, 3, false)
	bound := regrantBound(len(e.items))
	for _, n := range []string{"a", "b", "c"} {
		e.startOwner(n, e.c.Endpoints())
	}

	// During the first auctions: an owner has bid, no window has closed.
	e.waitEvent("bid", slack, nil)
	m, killed := e.killLeader()
	granted := len(e.holders())
	t.Logf("killed the leader %s during the auctions (%d items granted by then)", m.Name, granted)
	e.restart(m)
	e.waitWritten(killed, bound, nil)

	// During renewals: every item held and renewed.
	before := e.waitRenewed()
	m, killed = e.killLeader()
	t.Logf("killed the leader %s during renewals; holders %v", m.Name, before)
	e.restart(m)
	e.waitWritten(killed, bound, nil)
	lost := e.lostSince(killed)
	t.Logf("leases lost after the second kill: %v", lost)
	e.waitZombies(lost)

	e.killOwners()
	e.check()
}

func TestFaultPartition(t *testing.T) {
	if !faultParent(t) {
		return
	}
	e := newFaultEnv(t, 3, true)
	bound := regrantBound(len(e.items))
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	leader, err := e.c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, m := range e.c.Members {
		if m != leader {
			rest = append(rest, m.ClientAddr())
		}
	}
	a := e.startOwner("a", []string{leader.ClientAddr()})
	a.wait("acquired", slack) // a bids first and wins at least one item
	e.startOwner("b", rest[:1])
	e.startOwner("c", rest[1:])
	e.waitWritten(time.Now(), slack, nil)
	held := make(map[string]lease.Fence) // a's items
	for item, h := range e.waitRenewed() {
		if h.node == "a" {
			held[item] = h.fence
		}
	}
	if len(held) == 0 {
		t.Fatal("owner a holds no item")
	}

	leader.PeerProxy().Pause()
	leader.ClientProxy().Pause()
	cut := time.Now()
	t.Logf("partitioned the leader %s from its peers and from a, which held %v", leader.Name, held)
	// b and c take over a's items while the partition lasts: a fence
	// above a's, within the bound of the partition's start.
	e.waitWritten(cut, regrantBound(len(held)), held)
	leader.PeerProxy().Resume()
	leader.ClientProxy().Resume()
	healed := time.Now()
	t.Logf("healed after %v", healed.Sub(cut).Round(time.Millisecond))
	if err := e.c.WaitReady(); err != nil {
		t.Fatal(err)
	}
	e.waitWritten(healed, bound, nil)
	for item, f := range held {
		e.waitEvent("lost", slack, func(l map[string]string) bool {
			return l["node"] == "a" && l["item"] == item && fenceOf(t, l) == f
		})
	}
	e.waitZombies(held) // answered once a reaches etcd again

	e.killOwners()
	e.check()
}

func TestFaultClusterRestart(t *testing.T) {
	if !faultParent(t) {
		return
	}
	e := newFaultEnv(t, 3, false)
	bound := regrantBound(len(e.items))
	for _, n := range []string{"a", "b", "c"} {
		e.startOwner(n, e.c.Endpoints())
	}
	e.waitWritten(time.Now(), slack, nil)
	hs := e.waitRenewed()
	before := e.reg.highest()
	// The holder of item-0 dies with the cluster: its items must be
	// granted again after the restart, with greater fences.
	victim := hs["item-0"].node
	dead := make(map[string]lease.Fence)
	for item, h := range hs {
		if h.node == victim {
			dead[item] = h.fence
		}
	}

	if err := e.c.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	for _, o := range e.owners {
		if o.node == victim {
			o.Signal(syscall.SIGKILL)
		}
	}
	// An outage longer than the TTL: every holder's lease lapses by its
	// own clock.
	time.Sleep(faultTTL + lapse)
	for _, m := range e.c.Members {
		if err := m.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.WaitReady(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	t.Logf("cluster down %v; highest fences before: %v; %s, holder of %v, killed with it",
		up.Sub(down).Round(time.Millisecond), before, victim, dead)
	// The items of the dead owner are granted again with fences above
	// every fence from before the restart; the others are held again,
	// with their grant from before (etcd restarts every lease's TTL when
	// a leader is elected, so a grant outlives the outage and its holder
	// may take it up again) or a newer one.
	e.waitWritten(up, regrantBound(len(dead)), dead)
	after := e.waitWritten(up, bound, nil)
	for item, f := range before {
		if after[item].fence < f {
			t.Errorf("%s: first write after the restart with fence %d, below %d from before it", item, after[item].fence, f)
		}
	}
	for _, o := range e.owners {
		if o.node == victim {
			continue
		}
		for _, f := range o.events("lost") {
			t.Logf("%s lost %s fence %s: %s", o.node, f["item"], f["fence"], f["reason"])
		}
	}
	lost := e.lostSince(down)
	for item, f := range lost {
		if e.holders()[item].fence == f {
			delete(lost, item) // taken up again: no newer fence to be stale against
		}
	}
	e.waitZombies(lost)

	e.killOwners()
	e.check()
}
