package etcd_test

// The parent side of the fault tests: the fenced register, the owner
// processes, and the readers and checks of what the owners and the
// register reported.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/internal/testbed/proctest"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
)

// The fault tests' timing. etcd leases count whole seconds, and the
// smallest TTL the test servers allow is one second.
const (
	faultTTL    = 2 * time.Second
	faultWindow = time.Second
	faultGrace  = time.Second
	faultMargin = faultTTL / 10
	// lapse is how late etcd's leader may revoke an expired lease (its
	// revoke loop runs every 500 ms).
	lapse = 500 * time.Millisecond
	// slack bounds the waits for what must happen, generously: a loaded
	// two-core machine running -race is slow, and a wait that runs out
	// only fails the test.
	slack     = 15 * time.Second
	ownerLife = 90 * time.Second
	// faultPrefix is the store's prefix: each test has a cluster of its
	// own.
	faultPrefix = "fault/"
	gib         = int64(1) << 30
)

// regrantBound is how long after a fault ends n items that must be
// auctioned again must be held again, shown by an accepted register
// write: the holders' leases lapse (TTL, plus the up to half a second
// etcd revokes late), an auction is held for each item, one after the
// other in the worst case (a window per item: a node bids in one auction
// at a time), plus five seconds for a new election, clients
// reconnecting, bid and write polls and a loaded machine (three were
// overrun by 0.7 s once in CI, with the integration lane running three
// packages of processes and clusters on two cores).
func regrantBound(n int) time.Duration {
	return faultTTL + lapse + time.Duration(n)*faultWindow + 5*time.Second
}

// registerReply is the register's answer.
type registerReply struct {
	Accepted bool        `json:"accepted"`
	Last     lease.Fence `json:"last"`
}

// regEntry is one write the register received.
type regEntry struct {
	item     string
	fence    lease.Fence
	node     string
	seq      int64
	zombie   bool
	accepted bool
	last     lease.Fence // the highest fence before this write
	at       int64       // the register's clock, µs
}

// register is the fenced resource the owners write to: an HTTP server in
// the test process, outside the lease store, that keeps the highest fence
// accepted per item and accepts a write only if lease.CheckFence passes.
// It logs every write, accepted or rejected.
//
//	POST /write?item=&fence=&node=&seq=&zombie=  → {"accepted", "last"}
//	POST /last?item=                             → {"last"}
type register struct {
	srv  *httptest.Server
	mu   sync.Mutex
	last map[string]lease.Fence
	log  []regEntry
}

func newRegister(t *testing.T) *register {
	r := &register{last: make(map[string]lease.Fence)}
	mux := http.NewServeMux()
	mux.HandleFunc("/write", r.write)
	mux.HandleFunc("/last", r.lastOf)
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *register) write(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	item, node := q.Get("item"), q.Get("node")
	fence, err1 := strconv.ParseUint(q.Get("fence"), 10, 64)
	seq, err2 := strconv.ParseInt(q.Get("seq"), 10, 64)
	zombie, err3 := strconv.ParseBool(q.Get("zombie"))
	if item == "" || node == "" || err1 != nil || err2 != nil || err3 != nil {
		http.Error(w, fmt.Sprintf("register: bad write %q: want item, node, fence, seq and zombie", req.URL.RawQuery), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	e := regEntry{item: item, fence: lease.Fence(fence), node: node, seq: seq, zombie: zombie,
		last: r.last[item], at: time.Now().UnixMicro()}
	e.accepted = lease.CheckFence(e.last, e.fence) == nil
	if e.accepted {
		r.last[item] = e.fence
	}
	r.log = append(r.log, e)
	r.mu.Unlock()
	reply := registerReply{Accepted: e.accepted, Last: e.last}
	if e.accepted {
		reply.Last = e.fence
	}
	_ = json.NewEncoder(w).Encode(reply)
}

func (r *register) lastOf(w http.ResponseWriter, req *http.Request) {
	item := req.URL.Query().Get("item")
	if item == "" {
		http.Error(w, "register: last: no item", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	last := r.last[item]
	r.mu.Unlock()
	_ = json.NewEncoder(w).Encode(registerReply{Last: last})
}

// entries returns a copy of the register's log.
func (r *register) entries() []regEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]regEntry(nil), r.log...)
}

// highest returns the highest fence accepted per item.
func (r *register) highest() map[string]lease.Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]lease.Fence, len(r.last))
	for k, v := range r.last {
		out[k] = v
	}
	return out
}

// faultEnv is one fault test's world: a three-member etcd cluster, the
// catalog (its items put), the register and the owner processes.
type faultEnv struct {
	t      *testing.T
	c      *etcdtest.Cluster
	cli    *clientv3.Client // the parent's, over every endpoint
	s      *leaseetcd.Store
	reg    *register
	items  []string
	owners []*ownerProc
}

// newFaultEnv starts a three-member cluster (behind proxies if proxied)
// and the register, and puts n items.
func newFaultEnv(t *testing.T, n int, proxied bool) *faultEnv {
	t.Helper()
	opts := []etcdtest.Option{etcdtest.WithMembers(3)}
	if proxied {
		opts = append(opts, etcdtest.WithProxies())
	}
	e := &faultEnv{t: t, c: etcdtest.Start(t, opts...), reg: newRegister(t)}
	e.cli = etcdtest.Client(t, e.c.Endpoints()...)
	s, err := leaseetcd.New(e.cli, faultPrefix, lease.WithTTL(faultTTL),
		lease.WithAuctionWindow(faultWindow), lease.WithPendingGrace(faultGrace))
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	for i := range n {
		e.items = append(e.items, "item-"+strconv.Itoa(i))
	}
	e.put()
	return e
}

// put (re)creates the catalog rows: auctions without a short-circuit
// threshold, so the window closes them.
func (e *faultEnv) put() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slack)
	defer cancel()
	for _, id := range e.items {
		if err := e.s.Put(ctx, lease.Item{ID: id, Commit: "c0", Size: gib}); err != nil {
			e.t.Fatalf("put %s: %v", id, err)
		}
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
// whose etcd client uses endpoints, competing for every item as a zombie
// (see ownerConfig). It waits until the owner is ready. The process is
// killed by PID at the end of the test.
func (e *faultEnv) startOwner(node string, endpoints []string) *ownerProc {
	e.t.Helper()
	cfg, err := json.Marshal(ownerConfig{
		Node: node, Endpoints: endpoints, Prefix: faultPrefix, Items: e.items,
		Free: 8 * gib, ItemSize: gib, TTL: faultTTL, Window: faultWindow, Grace: faultGrace,
		Margin: faultMargin, Life: ownerLife, Register: e.reg.srv.URL, Zombie: true,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	p := proctest.Start(e.t, os.Args[0], "-test.run=^"+regexp.QuoteMeta(e.t.Name())+"$",
		"-test.count=1", "-test.v=false", ownerArg, string(cfg))
	// Runs before proctest's own cleanup and before the cluster is
	// killed: nothing of an owner needs a graceful end.
	e.t.Cleanup(func() { p.Signal(syscall.SIGKILL) })
	o := &ownerProc{Proc: p, node: node}
	o.wait("ready", slack)
	e.owners = append(e.owners, o)
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

// killOwners kills every owner (SIGKILL) and waits until each is gone, so
// that the logs the checks read are final.
func (e *faultEnv) killOwners() {
	e.t.Helper()
	for _, o := range e.owners {
		o.Signal(syscall.SIGKILL)
	}
	for _, o := range e.owners {
		o.Wait(slack)
	}
}

func num(t *testing.T, f map[string]string, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(f[key], 10, 64)
	if err != nil {
		t.Fatalf("line %v: %s: %v", f, key, err)
	}
	return n
}

func fenceOf(t *testing.T, f map[string]string) lease.Fence {
	t.Helper()
	return lease.Fence(num(t, f, "fence"))
}

// waitEvent waits until some owner has written a line with msg=msg that
// satisfies ok, and returns it with its owner.
func (e *faultEnv) waitEvent(msg string, d time.Duration, ok func(map[string]string) bool) (*ownerProc, map[string]string) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, o := range e.owners {
			for _, f := range o.events(msg) {
				if ok == nil || ok(f) {
					return o, f
				}
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no owner wrote %s within %v", msg, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holder is who acquired an item last, with which fence, and whether it
// renewed it since.
type holder struct {
	node    string
	fence   lease.Fence
	renewed bool
}

// holders returns the holder of each item by its newest acquired line.
func (e *faultEnv) holders() map[string]holder {
	out := make(map[string]holder)
	for _, o := range e.owners {
		for _, f := range o.events("acquired") {
			fe := fenceOf(e.t, f)
			if h, ok := out[f["item"]]; !ok || fe > h.fence {
				out[f["item"]] = holder{node: o.node, fence: fe}
			}
		}
	}
	return out
}

// waitWritten waits until the register has accepted, at or after since,
// a write of every item with a fence above above[item] (any fence when
// above has none), and fails the test if that takes past since+bound (a
// loaded machine gets until since+slack to show how late it was). It
// returns the first such write of each item.
func (e *faultEnv) waitWritten(since time.Time, bound time.Duration, above map[string]lease.Fence) map[string]regEntry {
	e.t.Helper()
	s := since.UnixMicro()
	deadline := since.Add(max(bound, slack))
	for {
		first := make(map[string]regEntry)
		for _, r := range e.reg.entries() {
			if _, ok := first[r.item]; !ok && r.accepted && r.at >= s && r.fence > above[r.item] {
				first[r.item] = r
			}
		}
		if len(first) == len(e.items) {
			var worst time.Duration
			for _, id := range e.items {
				worst = max(worst, time.Duration(first[id].at-s)*time.Microsecond)
			}
			if worst > bound {
				e.t.Errorf("an item was first written %v after %s, more than the bound %v", worst, since.Format("15:04:05.000"), bound)
			}
			e.t.Logf("every item written (fence above %v) within %v of %s (bound %v)", above, worst, since.Format("15:04:05.000"), bound)
			return first
		}
		if time.Now().After(deadline) {
			var missing []string
			for _, id := range e.items {
				if _, ok := first[id]; !ok {
					missing = append(missing, id)
				}
			}
			e.t.Fatalf("items %v: no register write accepted with a fence above %v within %v of %s (bound %v); highest accepted %v",
				missing, above, time.Since(since).Round(time.Millisecond), since.Format("15:04:05.000"), bound, e.reg.highest())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRenewed waits until the current holder of every item (by its
// newest acquired line) has renewed it at least once, and returns the
// holders.
func (e *faultEnv) waitRenewed() map[string]holder {
	e.t.Helper()
	deadline := time.Now().Add(slack)
	for {
		hs := e.holders()
		for _, o := range e.owners {
			for _, f := range o.events("renewed") {
				if h, ok := hs[f["item"]]; ok && h.node == o.node && h.fence == fenceOf(e.t, f) {
					hs[f["item"]] = holder{h.node, h.fence, true}
				}
			}
		}
		all := len(hs) == len(e.items)
		for _, h := range hs {
			all = all && h.renewed
		}
		if all {
			return hs
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("not every item held and renewed within %v: %v", slack, hs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitZombies waits until every lease in lost (item -> fence) has been
// renewed by its lost holder acting as a zombie (the zombie-renew line;
// check asserts the refusal).
func (e *faultEnv) waitZombies(lost map[string]lease.Fence) {
	e.t.Helper()
	for item, f := range lost {
		e.waitEvent("zombie-renew", slack, func(l map[string]string) bool {
			return l["item"] == item && fenceOf(e.t, l) == f
		})
	}
}

// grantEvent is a grant an owner acquired.
type grantEvent struct {
	item    string
	node    string
	fence   lease.Fence
	granted int64 // µs
}

// belief is an instant at which an owner held a lease by its own clock:
// before a write it checked the lease valid, or the deadline an acquire
// or renewal gave it.
type belief struct {
	item  string
	node  string
	fence lease.Fence
	at    int64 // µs
	what  string
}

// check asserts, from the owners' logs and the register's log, what holds
// in every fault test, and returns the number of failures it reported:
//
//   - per item, each fence is acquired by one node only, and fences
//     strictly increase with the grants' times;
//   - the register's accepted fences never go down per item, no fence's
//     writes come from two nodes, and it accepted no zombie write (zero
//     writes with a stale fence);
//   - every zombie write and zombie renewal an owner reported was refused;
//   - every write the register acknowledged to an owner is in its log;
//   - no owner held an item, by its own clock, at or after the time of a
//     later grant of it (the grant's etcd lease was asked for after the
//     earlier grant had lapsed in etcd): no two holders at once. Clocks
//     are comparable because every process runs on this host.
func (e *faultEnv) check() {
	e.t.Helper()
	var grants []grantEvent
	var beliefs []belief
	wrote := make(map[string]string) // "node seq" -> item
	zombies := 0
	for _, o := range e.owners {
		for _, f := range o.events("acquired") {
			grants = append(grants, grantEvent{f["item"], o.node, fenceOf(e.t, f), num(e.t, f, "granted_us")})
			beliefs = append(beliefs, belief{f["item"], o.node, fenceOf(e.t, f), num(e.t, f, "deadline_us"), "acquired deadline"})
		}
		for _, f := range o.events("renewed") {
			beliefs = append(beliefs, belief{f["item"], o.node, fenceOf(e.t, f), num(e.t, f, "deadline_us"), "renewed deadline"})
		}
		for _, f := range o.events("wrote") {
			beliefs = append(beliefs, belief{f["item"], o.node, fenceOf(e.t, f), num(e.t, f, "at_us"), "write"})
			wrote[o.node+" "+f["seq"]] = f["item"]
		}
		for _, f := range o.events("rejected") {
			beliefs = append(beliefs, belief{f["item"], o.node, fenceOf(e.t, f), num(e.t, f, "at_us"), "rejected write"})
		}
		for _, f := range o.events("zombie-register") {
			zombies++
			if f["accepted"] != "false" || f["err"] != "<nil>" {
				e.t.Errorf("%s's zombie write with the lost fence %s of %s: accepted=%s err=%s; want refused",
					o.node, f["fence"], f["item"], f["accepted"], f["err"])
			}
		}
		for _, f := range o.events("zombie-renew") {
			if f["refused"] != "true" {
				e.t.Errorf("%s's renewal of the lost fence %s of %s: %s; want ErrNotHeld or ErrStaleFence",
					o.node, f["fence"], f["item"], f["err"])
			}
		}
	}
	sort.Slice(grants, func(i, j int) bool {
		a, b := grants[i], grants[j]
		return a.item < b.item || a.item == b.item && a.fence < b.fence
	})
	for i := 1; i < len(grants); i++ {
		a, b := grants[i-1], grants[i]
		if a.item != b.item {
			continue
		}
		if a.fence == b.fence {
			// A holder whose lease lapsed by its own clock may find the
			// grant still live in etcd and take it up again (after a
			// restart of the whole cluster, which restarts every etcd
			// lease's TTL); another node never gets the same fence.
			if a.node != b.node {
				e.t.Errorf("%s: fence %d acquired by %s and by %s", a.item, a.fence, a.node, b.node)
			}
			continue
		}
		if b.granted <= a.granted {
			e.t.Errorf("%s: grant of fence %d to %s at %d µs is not after the grant of the older fence %d to %s at %d µs",
				b.item, b.fence, b.node, b.granted, a.fence, a.node, a.granted)
		}
	}
	log := e.reg.entries()
	high := make(map[string]lease.Fence)
	in := make(map[string]bool)
	writer := make(map[string]string) // "item fence" -> the node that wrote it first
	accepted, rejected := 0, 0
	for _, r := range log {
		if !r.accepted {
			rejected++
			continue
		}
		accepted++
		k := r.item + " " + strconv.FormatUint(uint64(r.fence), 10)
		if w, ok := writer[k]; !ok {
			writer[k] = r.node
		} else if w != r.node && w != "" {
			e.t.Errorf("register accepted writes of %s with fence %d from two holders: %s and %s", r.item, r.fence, w, r.node)
			writer[k] = "" // reported
		}
		in[r.node+" "+strconv.FormatInt(r.seq, 10)] = true
		if r.fence < high[r.item] {
			e.t.Errorf("register accepted %s fence %d (%s seq %d) after fence %d", r.item, r.fence, r.node, r.seq, high[r.item])
		}
		if r.zombie {
			e.t.Errorf("register accepted %s's zombie write of %s with the lost fence %d", r.node, r.item, r.fence)
		}
		high[r.item] = max(high[r.item], r.fence)
	}
	for k, item := range wrote {
		if !in[k] {
			e.t.Errorf("register write %s (%s) was acknowledged but is not in the register's log", k, item)
		}
	}
	overlaps := 0
	for _, g := range grants {
		for _, b := range beliefs {
			if b.item == g.item && b.fence < g.fence && b.at >= g.granted {
				if overlaps++; overlaps <= 5 {
					e.t.Errorf("%s believed it held %s fence %d at %d µs (%s), %d µs after fence %d was granted to %s",
						b.node, b.item, b.fence, b.at, b.what, b.at-g.granted, g.fence, g.node)
				}
			}
		}
	}
	if overlaps > 5 {
		e.t.Errorf("... %d overlapping beliefs in all", overlaps)
	}
	e.t.Logf("checked %d grants, %d beliefs, %d register writes accepted and %d rejected, %d zombie writes",
		len(grants), len(beliefs), accepted, rejected, zombies)
}
