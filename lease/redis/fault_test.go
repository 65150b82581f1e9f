package redis_test

// Fault tests with real processes: each test runs its own redis-servers
// (one for the catalog, usually a second for a fenced register that
// stands for the resources an owner writes to), and owner processes,
// which are this test binary re-executed (see fault_owner_test.go). An
// owner heartbeats, bids, wins the item at auction, acquires the lease,
// renews it every TTL/4 and, every 50 ms while the lease is valid by its
// own clock, writes the register (fence-checked by a Lua script, the rule
// of lease.CheckFence) and updates its row with its Ref (Store.Update,
// fence-checked by the store). It reports every step on standard output.
// TTL 1.5 s, window 300 ms, margin 150 ms.
//
// Every test ends with the checks of faultEnv.check: fences strictly
// increase with grant time; the register never accepts an older fence
// after a newer one; no write the register acknowledged is lost; and
// (except across a restart that loses the catalog) no owner believed it
// held the item, by its own clock, at or after the server time of a later
// grant of it.
//
//   - TestFaultOwnerKilled: SIGKILL of the owner. A second owner process
//     takes over within TTL + window (+ slack) with a greater fence; the
//     killed owner's acknowledged writes are all there; every write of the
//     old fence landed before the new grant; the old Ref is refused.
//   - TestFaultOwnerPaused: SIGSTOP of the owner past its TTL, another
//     owner wins, SIGCONT. The paused owner reports its lease lost (Done,
//     ErrNotHeld or ErrStaleFence) without another accepted write; its
//     deliberate writes with the old Ref (register and row) are refused.
//   - TestFaultRedisRestartPersistent: SIGKILL of a redis-server with
//     appendfsync always, restarted on its port. The row and every
//     acknowledged write survive; the owner keeps its lease or regains it
//     with a greater fence, and goes on writing.
//   - TestFaultRedisRestartLosesData: SIGKILL of a redis-server without
//     persistence, restarted empty. The owner learns its lease is gone;
//     once the catalog is put back, a new auction grants the item with a
//     fence greater than every fence before the loss, so the register
//     (which survived) accepts the new owner and refuses the old fence.
//   - TestFaultScriptFlushWhileOwning: SCRIPT FLUSH every 25 ms on both
//     servers while owners renew, write, bid, and take over from a killed
//     owner: no operation fails (go-redis answers NOSCRIPT with EVAL).
//     TestScriptFlush covers the single-process case.
//   - TestFaultNetworkDelay: 40 ms each way between the owner and Redis
//     through internal/testbed/netproxy: the owner keeps its lease and writes.
//   - TestFaultNetworkDelayBeyondMargin: requests delayed 1.2 s and
//     answers 0.3 s (more than the margin; a round trip longer than the
//     TTL): the owner's Done closes before the store grants the item to a
//     second owner that talks to Redis directly.
//   - TestFaultNetworkStall: traffic stalled for longer than the TTL: the
//     owner learns, while still cut off, that it lost the lease; after the
//     network resumes, requests queued in the stall land late and are
//     refused, and the owner wins the item back with a greater fence.
//
// Assertions are about order and fences; the only time bound is the
// takeover after a SIGKILL, TTL + window + a generous slack.

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/internal/testbed/netproxy"
	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
)

const (
	// takeoverSlack is what a takeover may take beyond TTL + window: bid
	// polls, evaluation polls and a loaded machine.
	takeoverSlack = 3 * time.Second
	gib           = 1 << 30
)

// faultParent runs the owner process and returns false when the test
// binary was started as one; otherwise it skips the test under -short,
// marks it parallel and returns true.
func faultParent(t *testing.T) bool {
	if runOwnerIfChild(t) {
		return false
	}
	lane.Integration(t, "fault tests run processes for seconds")
	t.Parallel()
	return true
}

// waitGrant waits until owners have reported more than before grants in
// all, and returns the owner and the acquired line of one that was not
// among the first before.
func waitGrant(t *testing.T, before int, owners ...*ownerProc) (*ownerProc, map[string]string) {
	t.Helper()
	deadline := time.Now().Add(slack)
	for time.Now().Before(deadline) {
		seen := 0
		for _, o := range owners {
			evs := o.events("acquired")
			if seen+len(evs) > before {
				return o, evs[max(0, before-seen)]
			}
			seen += len(evs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no new grant to %d owners within %v (%d before)", len(owners), slack, before)
	return nil, nil
}

// noEvents fails the test if o reported any line with one of msgs.
func noEvents(t *testing.T, o *ownerProc, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		for _, f := range o.events(m) {
			t.Errorf("%s reported %s: %v", o.node, m, f)
		}
	}
}

// reasonIs reports whether an owner's lost line names one of the
// sentinels (the reason crossed a process boundary as text).
func reasonIs(f map[string]string, sentinels ...error) bool {
	for _, s := range sentinels {
		if strings.Contains(f["reason"], s.Error()) {
			return true
		}
	}
	return false
}

func TestFaultOwnerKilled(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	a := e.startOwner("a", srv.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	b := e.startOwner("b", srv.Addr(), gib, false)
	a.waitWrites(5)

	a.Signal(syscall.SIGKILL)
	killed := time.Now()
	if code := a.Wait(slack); code != -1 {
		t.Fatalf("owner a exited with %d, want killed (-1)", code)
	}
	gb := b.wait("acquired", slack)
	fb := fence(t, gb)
	granted := num(t, gb, "granted_us")
	took := time.UnixMicro(granted).Sub(killed)
	t.Logf("takeover %v after SIGKILL (TTL %v + window %v); fence %d -> %d", took, faultTTL, faultWindow, fa, fb)
	if took > faultTTL+faultWindow+takeoverSlack {
		t.Errorf("takeover took %v, more than TTL %v + window %v + %v", took, faultTTL, faultWindow, takeoverSlack)
	}
	if fb <= fa {
		t.Fatalf("new grant's fence %d not above the killed owner's %d", fb, fa)
	}
	b.waitWrites(3)
	wrote := a.events("wrote")
	last := wrote[len(wrote)-1] // a wrote at least 5
	found := false
	for _, r := range e.registerLog() {
		found = found || r.node == "a" && r.fence == fa && strconv.Itoa(r.seq) == last["seq"]
		if r.fence == fa && r.at >= granted {
			t.Errorf("register accepted a write of the old fence %d at %d µs, after the new grant at %d µs", fa, r.at, granted)
		}
	}
	if !found {
		t.Errorf("the killed owner's last acknowledged write (seq %s) is not in the register", last["seq"])
	}
	e.assertStaleRejected(lease.Ref{Item: faultItem, Holder: "a", Fence: fa})
	e.check(e.history(a, b), true)
}

func TestFaultOwnerPaused(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	a := e.startOwner("a", srv.Addr(), gib, true)
	fa := fence(t, a.wait("acquired", slack))
	b := e.startOwner("b", srv.Addr(), gib, false)
	a.waitWrites(5)

	a.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	gb := b.wait("acquired", slack)
	fb := fence(t, gb)
	granted := num(t, gb, "granted_us")
	if fb <= fa {
		t.Fatalf("new grant's fence %d not above the paused owner's %d", fb, fa)
	}
	b.waitWrites(2) // the register has seen fb
	t.Logf("paused %v before resuming; fence %d -> %d", time.Since(stopped), fa, fb)
	a.Signal(syscall.SIGCONT)

	lost := a.wait("lost", slack)
	if fence(t, lost) != fa || !reasonIs(lost, lease.ErrNotHeld, lease.ErrStaleFence) {
		t.Errorf("paused owner's loss: %v; want fence %d, reason ErrNotHeld or ErrStaleFence", lost, fa)
	}
	if zr := a.wait("zombie-register", slack); zr["accepted"] != "false" {
		t.Errorf("register accepted the resumed owner's write with its old fence: %v", zr)
	}
	if zu := a.wait("zombie-update", slack); zu["stale"] != "true" {
		t.Errorf("store accepted the resumed owner's update with its old Ref: %v; want ErrStaleFence", zu)
	}
	// Whatever a was doing when stopped, no write of its fence landed
	// after the new grant.
	for _, r := range e.registerLog() {
		if r.fence == fa && r.at >= granted {
			t.Errorf("register accepted a write of the old fence %d at %d µs, after the new grant at %d µs", fa, r.at, granted)
		}
	}
	noEvents(t, b, "lost")
	e.check(e.history(a, b), true)
}

func TestFaultRedisRestartPersistent(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv := redistest.StartServer(t, redistest.WithAOF(""), redistest.WithStartTimeout(slack))
	// The register lives on the same server: its writes must survive too.
	e := newFaultEnv(t, srv.Addr(), srv.Addr(), faultTTL)
	a := e.startOwner("a", srv.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	a.waitWrites(5)
	a.wait("updated", slack)

	srv.Kill()
	var acked uint64 // the newest row version acknowledged before the kill
	for _, f := range a.events("updated") {
		acked = max(acked, uint64(num(t, f, "version")))
	}
	time.Sleep(faultTTL / 5) // an outage the owner notices
	srv.Start()

	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	row, err := e.s.Get(ctx, faultItem)
	if err != nil {
		t.Fatalf("row after the restart: %v", err)
	}
	if row.Version < acked || row.Fence < fa {
		t.Fatalf("row after the restart: version %d fence %d; acknowledged before the kill: version %d fence %d",
			row.Version, row.Fence, acked, fa)
	}
	// The owner keeps or regains the lease and goes on writing.
	for {
		u := a.wait("updated", slack)
		if uint64(num(t, u, "version")) > row.Version {
			if f := fence(t, u); f < fa {
				t.Fatalf("write after the restart with fence %d, below %d", f, fa)
			}
			break
		}
	}
	if lost := a.events("lost"); len(lost) > 0 {
		t.Logf("the owner lost its lease in the outage (%v) and won it back", lost[0]["reason"])
		_, g := waitGrant(t, 1, a)
		if fence(t, g) <= fa {
			t.Fatalf("regained with fence %d, not above %d", fence(t, g), fa)
		}
		t.Logf("fence %d -> %d", fa, fence(t, g))
	} else {
		t.Logf("the owner kept its lease (fence %d) through the restart; row version %d >= %d acknowledged", fa, row.Version, acked)
	}
	e.check(e.history(a), true)
}

func TestFaultRedisRestartLosesData(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	a := e.startOwner("a", srv.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	b := e.startOwner("b", srv.Addr(), gib, false)
	a.waitWrites(3)

	srv.Kill()
	srv.Start() // empty
	lost := a.wait("lost", slack)
	if fence(t, lost) != fa || !reasonIs(lost, lease.ErrNotFound, lease.ErrNotHeld) {
		t.Errorf("owner's loss: %v; want fence %d, reason ErrNotFound or ErrNotHeld", lost, fa)
	}
	t.Logf("owner a learnt the loss: %s", lost["reason"])
	e.put() // the catalog's administrator puts the item back
	w, g := waitGrant(t, 1, a, b)
	fn := fence(t, g)
	if fn <= fa {
		t.Fatalf("grant after the data-losing restart has fence %d, not above %d from before it", fn, fa)
	}
	t.Logf("after the data-losing restart %s won fence %d; before it, fence %d", w.node, fn, fa)
	w.waitWrites(2)
	e.assertStaleRejected(lease.Ref{Item: faultItem, Holder: "a", Fence: fa})
	e.check(e.history(a, b), false)
}

func TestFaultScriptFlushWhileOwning(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	a := e.startOwner("a", srv.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	b := e.startOwner("b", srv.Addr(), gib, false)
	a.waitWrites(2)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var flushes int
	var flushErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for range 4000 { // at most 100 s
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), slack)
			err := e.lc.ScriptFlush(ctx).Err()
			if err == nil {
				err = e.rc.ScriptFlush(ctx).Err()
			}
			cancel()
			if err != nil {
				flushErr = err
				return
			}
			flushes++
		}
	}()
	stopFlush := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	t.Cleanup(stopFlush)

	for range 3 {
		a.wait("renewed", slack)
	}
	a.waitWrites(5)
	noEvents(t, a, "lost", "renew-failed", "update-failed", "rejected", "error")
	a.Signal(syscall.SIGKILL)
	gb := b.wait("acquired", slack)
	if fb := fence(t, gb); fb <= fa {
		t.Fatalf("takeover fence %d not above %d", fb, fa)
	}
	b.waitWrites(5)
	b.wait("renewed", slack)
	stopFlush()
	if flushErr != nil {
		t.Fatalf("SCRIPT FLUSH: %v", flushErr)
	}
	t.Logf("%d flushes of both servers' script caches", flushes)
	noEvents(t, b, "lost", "renew-failed", "update-failed", "rejected", "error")
	e.check(e.history(a, b), true)
}

// startProxy puts a netproxy in front of addr until the end of the test.
func startProxy(t *testing.T, addr string) *netproxy.Proxy {
	t.Helper()
	p, err := netproxy.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	return p
}

func TestFaultNetworkDelay(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	const ttl = 2 * time.Second // renewals every 500 ms, lost only after 1.8 s without one
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), ttl)
	p := startProxy(t, srv.Addr())
	a := e.startOwner("a", p.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	a.waitWrites(2)

	const d = 40 * time.Millisecond
	p.SetDelay(d, d)
	from := len(a.events("updated"))
	for range 6 { // three seconds, one and a half TTLs
		a.wait("renewed", slack)
	}
	ups := a.events("updated")[from:]
	if len(ups) < 5 {
		t.Errorf("%d row updates in 6 renewal periods with %v each way; want the owner to keep writing", len(ups), d)
	}
	for _, u := range ups {
		if fence(t, u) != fa {
			t.Errorf("update with fence %d, want the first grant's %d throughout", fence(t, u), fa)
		}
	}
	noEvents(t, a, "lost", "update-failed")
	e.check(e.history(a), true)
}

func TestFaultNetworkDelayBeyondMargin(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	p := startProxy(t, srv.Addr())
	a := e.startOwner("a", p.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	// b talks to Redis directly and outbids a's late bids.
	b := e.startOwner("b", srv.Addr(), 2*gib, false)
	a.waitWrites(3)

	p.SetDelay(1200*time.Millisecond, 300*time.Millisecond)
	lost := a.wait("lost", slack)
	if fence(t, lost) != fa || !reasonIs(lost, lease.ErrNotHeld, lease.ErrStaleFence) {
		t.Errorf("delayed owner's loss: %v; want fence %d, reason ErrNotHeld or ErrStaleFence", lost, fa)
	}
	gb := b.wait("acquired", slack)
	fb, granted := fence(t, gb), num(t, gb, "granted_us")
	if fb <= fa {
		t.Fatalf("new grant's fence %d not above %d", fb, fa)
	}
	if at := num(t, lost, "at_us"); at >= granted {
		t.Errorf("the delayed owner's Done closed at %d µs, not before the new grant at %d µs", at, granted)
	} else {
		t.Logf("Done closed %v before the store granted fence %d elsewhere", time.Duration(granted-at)*time.Microsecond, fb)
	}
	b.waitWrites(2)
	e.assertStaleRejected(lease.Ref{Item: faultItem, Holder: "a", Fence: fa})
	e.check(e.history(a, b), true)
}

func TestFaultNetworkStall(t *testing.T) {
	if !faultParent(t) {
		return
	}
	srv, reg := redistest.StartServer(t), redistest.StartServer(t)
	e := newFaultEnv(t, srv.Addr(), reg.Addr(), faultTTL)
	p := startProxy(t, srv.Addr())
	a := e.startOwner("a", p.Addr(), gib, false)
	fa := fence(t, a.wait("acquired", slack))
	a.waitWrites(3)

	p.Pause()
	paused := time.Now()
	lost := a.wait("lost", slack) // learnt while still cut off
	if fence(t, lost) != fa || !reasonIs(lost, lease.ErrNotHeld) {
		t.Errorf("stalled owner's loss: %v; want fence %d, reason ErrNotHeld", lost, fa)
	}
	if rest := faultTTL + faultWindow - time.Since(paused); rest > 0 {
		time.Sleep(rest) // a stall well past the TTL
	}
	p.Resume()
	t.Logf("stalled %v", time.Since(paused))
	_, g := waitGrant(t, 1, a)
	if fence(t, g) <= fa {
		t.Fatalf("regained with fence %d, not above %d", fence(t, g), fa)
	}
	t.Logf("regained with fence %d after %d", fence(t, g), fa)
	a.waitWrites(2)
	e.assertStaleRejected(lease.Ref{Item: faultItem, Holder: "a", Fence: fa})
	e.check(e.history(a), true)
}
