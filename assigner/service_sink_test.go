package assigner_test

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/announce"
)

// gatedPublisher serves, on 127.0.0.1, an ipnisync publisher whose head is
// signed by a new key and held until gate is closed; it counts the head
// requests in hits. It returns the key's peer ID and the HTTP multiaddr.
func gatedPublisher(t *testing.T, gate <-chan struct{}, hits *atomic.Int64) (peer.ID, multiaddr.Multiaddr) {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	head := headPublisher(t, key, randCid(t))
	return id, serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		head.ServeHTTP(w, r)
	}))
}

// put PUTs an announce of c by p at addr to the running service.
func (r *running) put(t *testing.T, p peer.ID, c cid.Cid, addr multiaddr.Multiaddr) (int, string) {
	t.Helper()
	return putAnnounce(t, http.DefaultClient, r.http.URL,
		announce.Message{Cid: c, Addrs: []multiaddr.Multiaddr{addr.Encapsulate(multiaddr.StringCast("/p2p/" + p.String()))}})
}

// The announces of a publisher with an assign request in flight are
// coalesced: taken (204) whatever the limits, only noted as the newest;
// when the request ends, the newest alone goes on, forwarded once to the
// indexer that now holds the publisher.
func TestServiceCoalescesWhileAssigning(t *testing.T) {
	const n = 20
	a := newFakeIndexer(t, "a")
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	a.node.set(func(n *fakeNode) { n.assignGate = gate })
	var forwards atomic.Int64
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a},
		// One announce a second from a source, or of a known publisher.
		assigner.WithReceiverOptions(announce.WithSourceRate(1, 1), announce.WithPublisherRate(1, 1)),
		assigner.WithHooks(assigner.Hooks{Forward: func(string, peer.ID, error) { forwards.Add(1) }}))
	r.waitKnown(t)

	p := newPublisher(t)
	addr, _ := pubAddrs.Load(p)
	if code, _ := r.put(t, p, randCid(t), addr.(multiaddr.Multiaddr)); code != http.StatusNoContent {
		t.Fatalf("first announce: %d, want 204", code)
	}
	waitFor(t, "the assign request", func() bool {
		a.node.mu.Lock()
		defer a.node.mu.Unlock()
		return len(a.node.assigns) == 1
	})
	var newest cid.Cid
	for i := range n {
		newest = randCid(t)
		if code, retry := r.put(t, p, newest, addr.(multiaddr.Multiaddr)); code != http.StatusNoContent {
			t.Fatalf("announce %d while the assign is in flight: %d (Retry-After %q), want 204", i, code, retry)
		}
	}
	waitFor(t, "every announce noted", func() bool { return r.svc.Stats().Deferred == n })
	if rs := r.svc.Receiver().Stats(); rs.Coalesced != n || rs.RateLimited+rs.PublisherLimited != 0 {
		t.Errorf("receiver stats %+v: want %d coalesced, none limited", rs, n)
	}

	release()
	if got := a.nextAnnounce(t); got.Publisher != p || got.Cid != newest {
		t.Errorf("a got announce %s of %s, want the newest, %s of %s", got.Cid, got.Publisher, newest, p)
	}
	r.snapshot(t) // the result has been handled: every forward has started
	r.stop(t)()   // and ended
	if got := forwards.Load(); got != 1 {
		t.Errorf("%d announces forwarded, want the newest once", got)
	}
	if rs := a.recv.Stats(); rs.Accepted+rs.Duplicates != 1 {
		t.Errorf("a's receiver stats %+v: want one announce", rs)
	}
	if _, ok := a.node.holds(p); !ok {
		t.Error("the publisher is not assigned")
	}
}

// Unknown publishers beyond the running head fetches wait in the queue,
// their announces coalesced; an unknown publisher's announce that finds
// the queue full is refused with 503 and a Retry-After (not taken and
// dropped), and taken again once there is room.
func TestServiceVerifyQueueFull(t *testing.T) {
	a := newFakeIndexer(t, "a")
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a},
		assigner.WithVerifyConcurrency(1), assigner.WithVerifyQueue(1))
	r.waitKnown(t)

	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	var hits atomic.Int64
	running, runningAddr := gatedPublisher(t, gate, &hits)
	waiting, waitingAddr := gatedPublisher(t, gate, &hits)
	if code, _ := r.put(t, running, randCid(t), runningAddr); code != http.StatusNoContent {
		t.Fatalf("announce of the first publisher: %d, want 204", code)
	}
	waitFor(t, "the first head fetch", func() bool { return hits.Load() == 1 })
	for i := range 3 {
		if code, _ := r.put(t, waiting, randCid(t), waitingAddr); code != http.StatusNoContent {
			t.Fatalf("announce %d of the waiting publisher: %d, want 204", i, code)
		}
	}
	waitFor(t, "the second publisher queued", func() bool { st := r.svc.Stats(); return st.Waiting == 1 && st.Coalesced == 2 })

	refused := newPublisher(t)
	addr, _ := pubAddrs.Load(refused)
	code, retry := r.put(t, refused, randCid(t), addr.(multiaddr.Multiaddr))
	if code != http.StatusServiceUnavailable || retry == "" {
		t.Fatalf("announce of a third unknown publisher with the queue full: %d (Retry-After %q), want 503 with a Retry-After", code, retry)
	}
	if rs := r.svc.Receiver().Stats(); rs.Refused != 1 {
		t.Errorf("receiver stats %+v: want 1 refused", rs)
	}

	release()
	waitFor(t, "both publishers assigned", func() bool {
		_, ok1 := a.node.holds(running)
		_, ok2 := a.node.holds(waiting)
		return ok1 && ok2
	})
	if got := hits.Load(); got != 2 {
		t.Errorf("%d head fetches for two publishers, want 2", got)
	}
	if code, _ := r.put(t, refused, randCid(t), addr.(multiaddr.Multiaddr)); code != http.StatusNoContent {
		t.Fatalf("the refused publisher's next announce: %d, want 204", code)
	}
	waitFor(t, "the refused publisher assigned", func() bool { _, ok := a.node.holds(refused); return ok })
	if st := r.svc.Stats(); st.Busy != 0 || st.Verified != 3 {
		t.Errorf("service stats %+v: want 3 verified, none dropped busy", st)
	}
}

// The announces of a publisher the indexers hold at startup are limited
// per publisher, not by their source's budget.
func TestServiceHeldPublisherLimitedPerPublisher(t *testing.T) {
	p := newPublisher(t)
	a := newFakeIndexer(t, "a")
	a.node.set(func(n *fakeNode) { n.assigned[p] = "" })
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a},
		assigner.WithReceiverOptions(announce.WithSourceRate(1, 1), announce.WithPublisherRate(1, 5)))
	r.waitKnown(t)
	addr, _ := pubAddrs.Load(p)
	ok := 0
	for range 10 {
		switch code, retry := r.put(t, p, randCid(t), addr.(multiaddr.Multiaddr)); {
		case code == http.StatusNoContent:
			ok++
		case code != http.StatusTooManyRequests || retry == "":
			t.Fatalf("announce: %d (Retry-After %q), want 204 or 429 with a Retry-After", code, retry)
		}
	}
	if ok < 5 || ok > 6 {
		t.Errorf("%d of 10 announces of a held publisher taken, want its own burst, 5", ok)
	}
	if rs := r.svc.Receiver().Stats(); rs.PublisherLimited != uint64(10-ok) || rs.RateLimited != 0 {
		t.Errorf("receiver stats %+v: want %d limited per publisher, none per source", rs, 10-ok)
	}
}

// Take never waits for the loop: with Run not running, the service takes
// as many announces as its intake holds, then refuses them with 503 and
// a Retry-After.
func TestServiceIntakeFull(t *testing.T) {
	p := newPeerID(t)
	svc, err := assigner.NewService(assigner.ServiceConfig{Indexers: []assigner.ServiceIndexer{{AdminURL: "http://127.0.0.1:1", PresetPublishers: []peer.ID{p}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	r := &running{svc: svc, http: srv}
	for i := range announce.DefaultQueueSize {
		if code, _ := r.put(t, p, randCid(t), deadAddr); code != http.StatusNoContent {
			t.Fatalf("announce %d: %d, want 204", i, code)
		}
	}
	if code, retry := r.put(t, p, randCid(t), deadAddr); code != http.StatusServiceUnavailable || retry == "" {
		t.Fatalf("announce with the intake full: %d (Retry-After %q), want 503 with a Retry-After", code, retry)
	}
}
