package assigner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/ingest/announce"
)

// assertUntouched checks that the service has no publisher in its state
// and sent no indexer an assign or handoff request.
func assertUntouched(t *testing.T, r *running, fakes ...*fakeIndexer) {
	t.Helper()
	snap := r.snapshot(t)
	if len(snap.Publishers) != 0 {
		t.Errorf("publishers in the state: %+v, want none", snap.Publishers)
	}
	for _, ix := range snap.Indexers {
		if len(ix.Assigned)+len(ix.Pending) != 0 {
			t.Errorf("indexer %s: assigned %v, pending %v; want nothing", ix.ID, ix.Assigned, ix.Pending)
		}
	}
	for _, f := range fakes {
		f.node.mu.Lock()
		if len(f.node.assigns)+len(f.node.handoffs) != 0 {
			t.Errorf("%s got assign requests %v, handoffs %v", f.name, f.node.assigns, f.node.handoffs)
		}
		f.node.mu.Unlock()
	}
}

// An unknown publisher is assigned only once the head at the address its
// announce names verifies against its peer ID; announces that do not
// verify are dropped, not remembered, and the same publisher is not
// fetched again for a while.
func TestServiceVerifiesUnknownPublishers(t *testing.T) {
	a := newFakeIndexer(t, "a")
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a}, assigner.WithVerifyTimeout(2*time.Second))
	r.waitKnown(t)

	otherKey, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var wrongHits atomic.Int64
	wrong := serve(t, counted(headPublisher(t, otherKey, randCid(t)), &wrongHits)) // a head signed by another key
	noHead := serveHead(t, otherKey, cid.Undef)                                    // 204
	refused := httpMaddr(t, closedServer(t))                                       // nothing listens
	libp2pOnly := multiaddr.StringCast("/ip4/127.0.0.1/tcp/4001")
	garbage := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"head":`)) }))

	impostor := newPeerID(t)
	cases := []struct {
		name string
		pub  peer.ID
		addr multiaddr.Multiaddr
	}{
		{"head signed by another key", impostor, wrong},
		{"no head", newPeerID(t), noHead},
		{"unreachable", newPeerID(t), refused},
		{"no HTTP address", newPeerID(t), libp2pOnly},
		{"malformed head", newPeerID(t), garbage},
	}
	for _, c := range cases {
		if err := r.announceAt(t, c.pub, randCid(t), c.addr); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	waitFor(t, "every verification to fail", func() bool { return r.svc.Stats().Unverified == uint64(len(cases)) })
	assertUntouched(t, r, a)

	// The impostor again, with a new CID: dropped without a fetch.
	hits := wrongHits.Load()
	if err := r.announceAt(t, impostor, randCid(t), wrong); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the repeat to be skipped", func() bool { return r.svc.Stats().Skipped == 1 })
	if wrongHits.Load() != hits {
		t.Errorf("the impostor's address was fetched again within the retry delay")
	}

	// A real publisher is verified and assigned.
	p := newPublisher(t)
	c := randCid(t)
	if err := r.announce(t, p, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the real publisher assigned", func() bool { _, ok := a.node.holds(p); return ok })
	if got := a.nextAnnounce(t); got.Publisher != p || got.Cid != c {
		t.Errorf("a got announce %s of %s, want %s of %s", got.Cid, got.Publisher, c, p)
	}
	st := r.svc.Stats()
	if st.Verified != 1 || st.Unverified != uint64(len(cases)) || st.Skipped != 1 {
		t.Errorf("stats %+v, want 1 verified, %d unverified, 1 skipped", st, len(cases))
	}
	// Known now: a later announce at an unreachable address is forwarded
	// as before, without a fetch.
	c2 := randCid(t)
	if err := r.announceAt(t, p, c2, refused); err != nil {
		t.Fatal(err)
	}
	if got := a.nextAnnounce(t); got.Publisher != p || got.Cid != c2 {
		t.Errorf("a got announce %s of %s, want %s of %s", got.Cid, got.Publisher, c2, p)
	}
	if st := r.svc.Stats(); st.Verified != 1 || st.Unverified != uint64(len(cases)) {
		t.Errorf("a known publisher was verified again: %+v", st)
	}
}

// Without a dial policy that allows private addresses, a publisher on
// loopback cannot be verified.
func TestServiceVerifyDialPolicy(t *testing.T) {
	a := newFakeIndexer(t, "a")
	cfg := assigner.ServiceConfig{PollInterval: time.Hour, Indexers: []assigner.ServiceIndexer{a.config()}}
	svc, err := assigner.NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{svc: svc, http: httptest.NewServer(svc.Handler()), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- svc.Run(ctx) }()
	t.Cleanup(r.stop(t))
	r.waitKnown(t)

	p := newPublisher(t)
	if err := r.announce(t, p, randCid(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the verification to fail", func() bool { return r.svc.Stats().Unverified == 1 })
	assertUntouched(t, r, a)
}

// A flood of announces naming publishers that do not exist assigns
// nothing, runs at most the allowed verifications at once, refuses (503)
// what the verification queue cannot hold, and does not keep a real
// publisher out for long.
func TestServiceFakeAnnounceFlood(t *testing.T) {
	const (
		fakes       = 2000
		concurrency = 4
	)
	a, b := newFakeIndexer(t, "a"), newFakeIndexer(t, "b")
	r := runService(t, assigner.ServiceConfig{}, []*fakeIndexer{a, b}, assigner.WithVerifyConcurrency(concurrency), assigner.WithVerifyQueue(64))
	r.waitKnown(t)

	// The fakes' address answers every head request slowly, with a head
	// signed by a key none of them has, and counts requests in flight.
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight, maxInFlight, requests atomic.Int64
	head := counted(headPublisher(t, key, randCid(t)), &requests)
	slow := serve(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		head.ServeHTTP(w, req)
	}))

	ids := make([]peer.ID, fakes)
	for i := range ids {
		ids[i] = newPeerID(t)
	}
	// One client for every sender, closed at the end: a sender's Close
	// closes its client's idle connections, which the others are using.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	// Beyond the verification queue, announces are refused while their
	// request is open: 503 with a Retry-After, never 204 and a drop.
	var wg sync.WaitGroup
	var refused atomic.Int64
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < fakes; i += 8 {
				m := announce.Message{Cid: randCid(t), Addrs: []multiaddr.Multiaddr{slow.Encapsulate(multiaddr.StringCast("/p2p/" + ids[i].String()))}}
				switch code, retry := putAnnounce(t, hc, r.http.URL, m); {
				case code == http.StatusNoContent:
				case code == http.StatusServiceUnavailable && retry != "":
					refused.Add(1)
				default:
					errs <- fmt.Errorf("announce %d: %d with Retry-After %q, want 204, or 503 with a Retry-After", i, code, retry)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, "every fake announce handled", func() bool {
		st := r.svc.Stats()
		return st.Unverified+st.Busy+st.Skipped+st.Coalesced+uint64(refused.Load()) == fakes
	})
	st := r.svc.Stats()
	t.Logf("%d fake announces: %d refused (503), %+v, at most %d head fetches at once", fakes, refused.Load(), st, maxInFlight.Load())
	if rs := r.svc.Receiver().Stats(); rs.Refused != uint64(refused.Load()) {
		t.Errorf("the receiver counted %d refused announces, the senders got %d 503s", rs.Refused, refused.Load())
	}
	if st.Verified != 0 || st.Unverified == 0 {
		t.Errorf("stats %+v: want no verified and some unverified publishers", st)
	}
	if n := maxInFlight.Load(); n > concurrency || n == 0 {
		t.Errorf("%d head fetches ran at once, want 1 to %d", n, concurrency)
	}
	if n := requests.Load(); n != int64(st.Unverified) {
		t.Errorf("%d head requests for %d failed verifications", n, st.Unverified)
	}
	assertUntouched(t, r, a, b)

	// The flood is over: a real publisher gets in.
	p := newPublisher(t)
	if err := r.announce(t, p, randCid(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the real publisher assigned", func() bool {
		_, onA := a.node.holds(p)
		_, onB := b.node.holds(p)
		return onA || onB
	})
}

// putAnnounce PUTs m (CBOR) to the announce handler at u, as go-libipni's
// httpsender does, and returns the status and Retry-After.
func putAnnounce(t *testing.T, hc *http.Client, u string, m announce.Message) (int, string) {
	t.Helper()
	body, err := m.EncodeCBOR()
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req, err := http.NewRequest(http.MethodPut, u+"/announce", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// counted counts h's requests in n.
func counted(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, req)
	})
}

// closedServer is a server that was closed: its port refuses connections.
func closedServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv
}
