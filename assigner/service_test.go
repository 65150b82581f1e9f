package assigner_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// runService runs a service over the fake indexers until the test ends
// (or stop is called) and serves its announce handler.
type running struct {
	svc    *assigner.Service
	http   *httptest.Server
	cancel context.CancelFunc
	done   chan error
}

func runService(t *testing.T, cfg assigner.ServiceConfig, fakes []*fakeIndexer, opts ...assigner.ServiceOption) *running {
	t.Helper()
	for _, f := range fakes {
		cfg.Indexers = append(cfg.Indexers, f.config())
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Hour // polls only at startup and on PollNow
	}
	// The test publishers are on loopback: a private pool.
	svc, err := assigner.NewService(cfg, append([]assigner.ServiceOption{assigner.WithDialPolicy(privatePool)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{svc: svc, http: httptest.NewServer(svc.Handler()), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	t.Cleanup(r.stop(t))
	return r
}

func (r *running) stop(t *testing.T) func() {
	return func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			r.done <- nil // stop is idempotent
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return within %s of cancel", waitTimeout)
		}
		r.http.Close()
	}
}

// announce PUTs an announce of publisher p (CBOR) to the service, naming
// p's address if newPublisher serves p, and deadAddr otherwise.
func (r *running) announce(t *testing.T, p peer.ID, c cid.Cid) error {
	t.Helper()
	addr := deadAddr
	if a, ok := pubAddrs.Load(p); ok {
		addr = a.(multiaddr.Multiaddr)
	}
	return r.announceAt(t, p, c, addr)
}

// announceAt PUTs an announce of publisher p at addrs to the service.
func (r *running) announceAt(t *testing.T, p peer.ID, c cid.Cid, addrs ...multiaddr.Multiaddr) error {
	t.Helper()
	snd, err := announce.NewHTTPSender([]string{r.http.URL}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	return snd.Send(ctx, announce.Message{Cid: c, Addrs: addrs})
}

func (r *running) snapshot(t *testing.T) assigner.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		snap, err := r.svc.Snapshot(ctx)
		if errors.Is(err, assigner.ErrNotRunning) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond) // Run is starting
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
}

// waitKnown waits until every indexer has been polled or found offline.
func (r *running) waitKnown(t *testing.T) {
	t.Helper()
	waitFor(t, "the startup rebuild", func() bool {
		for _, ix := range r.snapshot(t).Indexers {
			if !ix.Known {
				return false
			}
		}
		return true
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServiceRebuild(t *testing.T) {
	// p1 is announced at deadAddr: a held publisher is not verified.
	p1, p2, p3 := newPeerID(t), newPublisher(t), newPeerID(t)
	c := newFakeIndexer(t, "c") // frozen, handed p3 off to b
	c.node.frozen = true
	c.node.assigned[p3] = ""
	a := newFakeIndexer(t, "a", admin.Assignment{Publisher: p1})
	b := newFakeIndexer(t, "b", admin.Assignment{Publisher: p3, Continued: c.node.id})
	b.node.preferred = []peer.ID{p2}
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a, b, c})
	r.waitKnown(t)

	snap := r.snapshot(t)
	if len(snap.Handoffs) != 0 {
		t.Errorf("handoffs after rebuild: %+v, want none (p3 continued on b)", snap.Handoffs)
	}
	byID := map[string]assigner.IndexerSnapshot{}
	for _, ix := range snap.Indexers {
		byID[ix.ID] = ix
	}
	if got := byID["a"].Assigned; len(got) != 1 || got[0].Publisher != p1 {
		t.Errorf("a assigned %+v, want p1", got)
	}
	if got := byID["b"].Assigned; len(got) != 1 || got[0].Publisher != p3 || got[0].Continued != c.node.id {
		t.Errorf("b assigned %+v, want p3 continued from c (the receiver is not dropped)", got)
	}
	if !byID["c"].Frozen || byID["b"].PeerID != b.node.id {
		t.Errorf("c frozen %v, b peer %s", byID["c"].Frozen, byID["b"].PeerID)
	}

	// p2 prefers b (b holds its data); p1 is held already: no request.
	cidP2 := randCid(t)
	if err := r.announce(t, p2, cidP2); err != nil {
		t.Fatal(err)
	}
	if err := r.announce(t, p1, randCid(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p2 assigned to b", func() bool { _, ok := b.node.holds(p2); return ok })
	if got := b.nextAnnounce(t); got.Publisher != p2 || got.Cid != cidP2 {
		t.Errorf("b got announce %s of %s, want %s of p2", got.Cid, got.Publisher, cidP2)
	}
	// p1's announce is forwarded to its holder a (resend).
	if got := a.nextAnnounce(t); got.Publisher != p1 {
		t.Errorf("a got announce of %s, want p1", got.Publisher)
	}
	a.node.mu.Lock()
	defer a.node.mu.Unlock()
	if len(a.node.assigns) != 0 || len(c.node.assigns) != 0 {
		t.Errorf("assign requests: a %v, c %v; want none", a.node.assigns, c.node.assigns)
	}
}

func TestServiceAnnounceAssignsAndForwards(t *testing.T) {
	p, denied := newPublisher(t), newPeerID(t)
	a, b := newFakeIndexer(t, "a"), newFakeIndexer(t, "b")
	var mu sync.Mutex
	var decisions []assigner.Decision
	var results []assigner.RequestResult
	hooks := assigner.Hooks{
		Decision: func(d assigner.Decision) { mu.Lock(); decisions = append(decisions, d); mu.Unlock() },
		Request:  func(rr assigner.RequestResult) { mu.Lock(); results = append(results, rr); mu.Unlock() },
	}
	r := runService(t, assigner.ServiceConfig{Replication: 2, Policy: assigner.ExceptPolicy(true, denied)},
		[]*fakeIndexer{a, b}, assigner.WithHooks(hooks))
	r.waitKnown(t)

	c := randCid(t)
	if err := r.announce(t, p, c); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeIndexer{a, b} {
		got := f.nextAnnounce(t)
		if got.Publisher != p || got.Cid != c {
			t.Errorf("%s: forwarded %s of %s, want %s of %s", f.name, got.Cid, got.Publisher, c, p)
		}
		if _, ok := f.node.holds(p); !ok {
			t.Errorf("%s does not hold p", f.name)
		}
	}
	if err := r.announce(t, denied, randCid(t)); !errors.Is(err, announce.ErrRejected) {
		t.Errorf("announce of a denied publisher: %v, want rejected (403)", err)
	}
	resp, err := http.DefaultClient.Do(mustReq(t, http.MethodPut, r.http.URL+"/ingest/announce", "garbage"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad body: %d, want 400", resp.StatusCode)
	}
	waitFor(t, "two request results", func() bool { mu.Lock(); defer mu.Unlock(); return len(results) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(decisions) != 2 {
		t.Errorf("decisions %v, want two assigns", decisions)
	}
	for _, rr := range results {
		if rr.Outcome != assigner.Done || rr.Kind != assigner.KindAssign {
			t.Errorf("result %+v", rr)
		}
	}
}

func mustReq(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, stringsReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestServiceHungIndexer(t *testing.T) {
	const timeout = 3 * time.Second
	a, b, c := newFakeIndexer(t, "a"), newFakeIndexer(t, "b"), newFakeIndexer(t, "c")
	a.node.hangAssign = true
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a, b, c}, assigner.WithRequestTimeout(timeout))
	r.waitKnown(t)

	start := time.Now()
	pubs := []peer.ID{newPublisher(t), newPublisher(t), newPublisher(t)}
	for _, p := range pubs {
		if err := r.announce(t, p, randCid(t)); err != nil {
			t.Fatal(err)
		}
	}
	// One publisher goes to the hung a; the others to b and c, long
	// before a's request times out.
	held := func(f *fakeIndexer) bool {
		for _, p := range pubs {
			if _, ok := f.node.holds(p); ok {
				return true
			}
		}
		return false
	}
	waitFor(t, "b and c assigned", func() bool { return held(b) && held(c) })
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("b and c assigned after %s; the hung a (timeout %s) delayed them", d, timeout)
	}
	// a's request may reach its handler after b's and c's are answered.
	assigns := func() int {
		a.node.mu.Lock()
		defer a.node.mu.Unlock()
		return len(a.node.assigns)
	}
	waitFor(t, "a's hung assign request", func() bool { return assigns() > 0 })
	if n := assigns(); n != 1 {
		t.Errorf("a got %d assign requests, want 1 (hung)", n)
	}
	// Shutting down does not wait for a's timeout either.
	stopStart := time.Now()
	r.stop(t)()
	if d := time.Since(stopStart); d > timeout/2 {
		t.Errorf("Run returned %s after cancel with a request hung", d)
	}
}

func TestServiceFrozenHandoffsSpread(t *testing.T) {
	var held []admin.Assignment
	var pubs []peer.ID
	for range 6 {
		p := newPeerID(t)
		pubs = append(pubs, p)
		held = append(held, admin.Assignment{Publisher: p})
	}
	f := newFakeIndexer(t, "f", held...)
	f.node.frozen = true
	a, b, c := newFakeIndexer(t, "a"), newFakeIndexer(t, "b"), newFakeIndexer(t, "c")
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{f, a, b, c})

	waitFor(t, "every publisher handed off", func() bool {
		for _, p := range pubs {
			ok := false
			for _, x := range []*fakeIndexer{a, b, c} {
				if cont, h := x.node.holds(p); h && cont == f.node.id {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	})
	for _, x := range []*fakeIndexer{a, b, c} {
		x.node.mu.Lock()
		if len(x.node.assigned) != 2 {
			t.Errorf("%s took %d publishers, want 2 (spread)", x.name, len(x.node.assigned))
		}
		for _, req := range x.node.handoffs {
			if req.FrozenID != f.node.id || req.FrozenURL != f.config().FindURL {
				t.Errorf("%s: handoff request %+v, want FrozenID %s FrozenURL %s", x.name, req, f.node.id, f.config().FindURL)
			}
		}
		x.node.mu.Unlock()
	}
	waitFor(t, "no handoff left", func() bool { return len(r.snapshot(t).Handoffs) == 0 })
}

func TestServiceRestartMidHandoff(t *testing.T) {
	p1, p2 := newPeerID(t), newPeerID(t)
	f := newFakeIndexer(t, "f", admin.Assignment{Publisher: p1}, admin.Assignment{Publisher: p2})
	f.node.frozen = true
	a, b := newFakeIndexer(t, "a"), newFakeIndexer(t, "b")
	b.node.hangHandoff = true
	fakes := []*fakeIndexer{f, a, b}

	r1 := runService(t, assigner.ServiceConfig{}, fakes, assigner.WithRequestTimeout(time.Minute))
	waitFor(t, "one handoff done, one hung", func() bool {
		b.node.mu.Lock()
		hung := len(b.node.handoffs) == 1
		b.node.mu.Unlock()
		done := 0
		for _, p := range []peer.ID{p1, p2} {
			if _, ok := a.node.holds(p); ok {
				done++
			}
		}
		return hung && done == 1
	})
	r1.stop(t)() // the assigner stops mid-handoff

	var onA, onB peer.ID
	for _, p := range []peer.ID{p1, p2} {
		if _, ok := a.node.holds(p); ok {
			onA = p
		} else {
			onB = p
		}
	}
	b.node.set(func(n *fakeNode) { n.hangHandoff = false })
	r2 := runService(t, assigner.ServiceConfig{}, fakes)
	waitFor(t, "the interrupted handoff to complete after the restart", func() bool {
		_, okA := b.node.holds(onB)
		_, okB := a.node.holds(onB)
		return okA || okB
	})
	waitFor(t, "no handoff left", func() bool { return len(r2.snapshot(t).Handoffs) == 0 })
	if n := a.node.handoffCount(onA) + b.node.handoffCount(onA); n != 1 {
		t.Errorf("the completed handoff was requested %d times, want 1 (recognised by Continued)", n)
	}
	for _, ps := range r2.snapshot(t).Publishers {
		if ps.Publisher != onA {
			continue
		}
		if len(ps.Assignments) != 2 || !slices.ContainsFunc(ps.Assignments, func(pa assigner.PublisherAssignment) bool {
			return pa.Indexer == "a" && pa.Continued == f.node.id
		}) {
			t.Errorf("after the restart, %+v; want a to keep it with Continued f (and f frozen)", ps.Assignments)
		}
	}
}

func TestServicePollNow(t *testing.T) {
	p := newPeerID(t)
	f := newFakeIndexer(t, "f", admin.Assignment{Publisher: p})
	a := newFakeIndexer(t, "a")
	d := newFakeIndexer(t, "d")
	d.node.down = true // unreachable at start: offline, retried on the next poll
	var mu sync.Mutex
	polls := map[string][]assigner.PollResult{}
	hooks := assigner.Hooks{Poll: func(pr assigner.PollResult) {
		mu.Lock()
		polls[pr.Indexer] = append(polls[pr.Indexer], pr)
		mu.Unlock()
	}}
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{f, a, d}, assigner.WithHooks(hooks))
	waitFor(t, "the first polls", func() bool { mu.Lock(); defer mu.Unlock(); return len(polls) == 3 })
	mu.Lock()
	if polls["d"][0].Err == nil || polls["f"][0].Err != nil {
		t.Errorf("first polls: d %+v, f %+v; want d failed, f fine", polls["d"], polls["f"])
	}
	mu.Unlock()

	f.node.set(func(n *fakeNode) { n.frozen = true })
	d.node.set(func(n *fakeNode) { n.down = false })
	r.svc.PollNow()
	waitFor(t, "the handoff after PollNow", func() bool {
		ca, okA := a.node.holds(p)
		cd, okD := d.node.holds(p)
		return (okA && ca == f.node.id) || (okD && cd == f.node.id)
	})
	r.waitKnown(t)
}
