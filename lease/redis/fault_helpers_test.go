package redis_test

// The parent side of the fault tests: owner processes, a persistent
// redis-server, and the readers and checks of what the owners reported.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// The fault tests' timing: short leases and windows so that a takeover
// takes about two seconds. slack bounds the waits, generously: a loaded
// two-core machine running -race may be slow, and a wait that runs out
// only fails the test, it proves nothing.
const (
	faultTTL    = 1500 * time.Millisecond
	faultWindow = 300 * time.Millisecond
	faultMargin = faultTTL / 10
	slack       = 10 * time.Second
	ownerLife   = 90 * time.Second
	faultItem   = "repo"
	faultPrefix = "fault:"
)

// faultEnv is one fault test's world: the lease store's redis-server, a
// second one for the fenced register, the catalog (the item put), and
// the owner processes.
type faultEnv struct {
	t      *testing.T
	ttl    time.Duration
	leases string          // address of the lease store's server
	lc     *goredis.Client // the parent's client of it
	s      *leaseredis.Store
	reg    string // address of the register's server
	rc     *goredis.Client
}

// newFaultEnv starts the register's server and puts the item into the
// catalog on the server at leases (started by the caller, which restarts
// it in some tests). The parent's client retries, so that it rides out
// the restarts.
func newFaultEnv(t *testing.T, leases, reg string, ttl time.Duration) *faultEnv {
	t.Helper()
	e := &faultEnv{t: t, ttl: ttl, leases: leases, reg: reg}
	e.lc = goredis.NewClient(&goredis.Options{Addr: leases})
	t.Cleanup(func() { _ = e.lc.Close() })
	e.rc = goredis.NewClient(&goredis.Options{Addr: reg})
	t.Cleanup(func() { _ = e.rc.Close() })
	s, err := leaseredis.New(e.lc, faultPrefix, lease.WithTTL(ttl), lease.WithAuctionWindow(faultWindow))
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	e.put()
	return e
}

// put (re)creates the catalog row of the item: an auction with no
// short-circuit threshold, so the window closes it.
func (e *faultEnv) put() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	if err := e.s.Put(ctx, lease.Item{ID: faultItem, Commit: "c0"}); err != nil {
		e.t.Fatalf("put %s: %v", faultItem, err)
	}
}

// ownerProc is a running owner process and the index of the next of its
// lines to read.
type ownerProc struct {
	*proctest.Proc
	node string
	next int
}

// startOwner re-executes this test binary as an owner process named node
// that talks to the lease store at addr (the server, or a proxy). The
// process is killed by PID at the end of the test, running or stopped.
func (e *faultEnv) startOwner(node, addr string, free int64, zombie bool) *ownerProc {
	e.t.Helper()
	cfg, err := json.Marshal(ownerConfig{
		Node: node, Addr: addr, RegAddr: e.reg, Prefix: faultPrefix, Item: faultItem, Free: free,
		TTL: e.ttl, Window: faultWindow, Margin: e.ttl / 10, Life: ownerLife, Zombie: zombie,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	p := proctest.Start(e.t, os.Args[0], "-test.run=^"+regexp.QuoteMeta(e.t.Name())+"$",
		"-test.count=1", "-test.v=false", ownerArg, string(cfg))
	// Runs before proctest's own cleanup: SIGKILL works on a stopped
	// process too, and nothing of an owner needs a graceful end. Signal
	// goes through os.Process, which never signals a reaped PID.
	e.t.Cleanup(func() { p.Signal(syscall.SIGKILL) })
	o := &ownerProc{Proc: p, node: node}
	o.wait("ready", slack)
	return o
}

// wait returns the fields of the owner's next line with msg=msg (skipping
// others), waiting at most d; it fails the test otherwise.
func (o *ownerProc) wait(msg string, d time.Duration) map[string]string {
	m := o.WaitLine(&o.next, `^.*msg=`+regexp.QuoteMeta(msg)+`( .*)?$`, d)
	return proctest.Fields(m[0])
}

// events returns every line the owner wrote with msg=msg, in order.
func (o *ownerProc) events(msg string) []map[string]string {
	var out []map[string]string
	for _, line := range strings.Split(o.Output(), "\n") {
		if f := proctest.Fields(line); f["msg"] == msg {
			out = append(out, f)
		}
	}
	return out
}

func num(t *testing.T, f map[string]string, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(f[key], 10, 64)
	if err != nil {
		t.Fatalf("line %v: %s: %v", f, key, err)
	}
	return n
}

func fence(t *testing.T, f map[string]string) lease.Fence {
	t.Helper()
	return lease.Fence(num(t, f, "fence"))
}

// regEntry is one accepted write of the fenced register.
type regEntry struct {
	fence lease.Fence
	node  string
	seq   int
	at    int64 // the register server's clock, µs
}

// registerLog reads the register's log of accepted writes, in order.
func (e *faultEnv) registerLog() []regEntry {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	lines, err := e.rc.LRange(ctx, registerKeys(faultPrefix)[1], 0, -1).Result()
	if err != nil {
		e.t.Fatalf("read the register log: %v", err)
	}
	out := make([]regEntry, 0, len(lines))
	for _, l := range lines {
		var r regEntry
		if _, err := fmt.Sscanf(l, "%d %s %d %d", &r.fence, &r.node, &r.seq, &r.at); err != nil {
			e.t.Fatalf("register log entry %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// waitWrites waits until o has reported n more accepted register writes
// (wrote lines) and returns the last.
func (o *ownerProc) waitWrites(n int) map[string]string {
	var f map[string]string
	for range n {
		f = o.wait("wrote", slack)
	}
	return f
}

// assertStaleRejected writes to the register and updates the row with a
// grant that has been superseded: both must refuse.
func (e *faultEnv) assertStaleRejected(old lease.Ref) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	ok, last, err := registerWrite(ctx, e.rc, faultPrefix, old.Fence, "parent", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	if ok || lease.CheckFence(last, old.Fence) == nil {
		e.t.Errorf("register accepted a write with superseded fence %d (highest %d)", old.Fence, last)
	}
	commit := "stale"
	if _, err := e.s.Update(ctx, old, lease.Mutation{Commit: &commit}); !errors.Is(err, lease.ErrStaleFence) {
		e.t.Errorf("row update with superseded %+v: %v, want lease.ErrStaleFence", old, err)
	}
}

// history is what all owners reported, for the checks every fault test
// ends with.
type history struct {
	grants  []grantEvent
	beliefs []belief
	wrote   map[[2]string]bool // (node, seq) of every write the register acknowledged
}

type grantEvent struct {
	node    string
	fence   lease.Fence
	granted int64 // µs, the lease server's clock
}

// belief is an instant at which an owner held a lease by its own
// clock: before a write it checked, or the deadline a renewal gave it.
type belief struct {
	node  string
	fence lease.Fence
	at    int64 // µs, the owner's clock
	what  string
}

func (e *faultEnv) history(owners ...*ownerProc) history {
	e.t.Helper()
	h := history{wrote: make(map[[2]string]bool)}
	for _, o := range owners {
		for _, f := range o.events("acquired") {
			h.grants = append(h.grants, grantEvent{o.node, fence(e.t, f), num(e.t, f, "granted_us")})
			h.beliefs = append(h.beliefs, belief{o.node, fence(e.t, f), num(e.t, f, "deadline_us"), "acquired deadline"})
		}
		for _, f := range o.events("renewed") {
			h.beliefs = append(h.beliefs, belief{o.node, fence(e.t, f), num(e.t, f, "deadline_us"), "renewed deadline"})
		}
		for _, f := range o.events("wrote") {
			h.beliefs = append(h.beliefs, belief{o.node, fence(e.t, f), num(e.t, f, "at_us"), "write"})
			h.wrote[[2]string{o.node, f["seq"]}] = true
		}
		for _, f := range o.events("updated") {
			h.beliefs = append(h.beliefs, belief{o.node, fence(e.t, f), num(e.t, f, "at_us"), "update"})
		}
	}
	sort.Slice(h.grants, func(i, j int) bool { return h.grants[i].fence < h.grants[j].fence })
	return h
}

// check asserts what holds in every fault test:
//   - fences strictly increase with the grants' times on the server, and
//     no fence is granted twice;
//   - the register's log never goes back to an older fence (no stale
//     write accepted);
//   - every write the register acknowledged to an owner is in its log
//     (none lost);
//   - with exclusive set, no owner held a lease (by its own clock) at or
//     after the server time of a later grant of the item: Done closes
//     before anyone else can win. Clocks are comparable because every
//     process and server runs on this host. A restart that loses the
//     catalog breaks this, by design; fences then keep the register safe.
func (e *faultEnv) check(h history, exclusive bool) {
	e.t.Helper()
	for i := 1; i < len(h.grants); i++ {
		a, b := h.grants[i-1], h.grants[i]
		if a.fence == b.fence {
			e.t.Errorf("fence %d granted twice: to %s and %s", a.fence, a.node, b.node)
		}
		if b.granted <= a.granted {
			e.t.Errorf("grant of fence %d to %s at %d µs is not after the grant of the older fence %d to %s at %d µs",
				b.fence, b.node, b.granted, a.fence, a.node, a.granted)
		}
	}
	log := e.registerLog()
	in := make(map[[2]string]bool)
	for i, r := range log {
		in[[2]string{r.node, strconv.Itoa(r.seq)}] = true
		if i > 0 && r.fence < log[i-1].fence {
			e.t.Errorf("register accepted fence %d (%s seq %d) after fence %d", r.fence, r.node, r.seq, log[i-1].fence)
		}
	}
	for k := range h.wrote {
		if !in[k] {
			e.t.Errorf("register write %s seq %s was acknowledged but is not in the register", k[0], k[1])
		}
	}
	if !exclusive {
		return
	}
	overlaps := 0
	for _, g := range h.grants {
		for _, b := range h.beliefs {
			if b.fence < g.fence && b.at >= g.granted {
				if overlaps++; overlaps <= 5 {
					e.t.Errorf("%s believed it held fence %d at %d µs (%s), %d µs after fence %d was granted to %s",
						b.node, b.fence, b.at, b.what, b.at-g.granted, g.fence, g.node)
				}
			}
		}
	}
	if overlaps > 5 {
		e.t.Errorf("... %d overlapping beliefs in all", overlaps)
	}
	e.t.Logf("%d grants, %d beliefs, %d register writes checked", len(h.grants), len(h.beliefs), len(log))
}
