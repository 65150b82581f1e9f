package assignernode_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/assigner"
	"github.com/indexkit/indexkit/examples/assignernode"
	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/internal/netlimit"
	"github.com/indexkit/indexkit/store/memory"
)

// The tests of this file run an assigner with DefaultConfig (but for
// AllowPrivateAddrs: the publishers are on loopback) over a real indexer,
// and real ipnisync publishers on 127.0.0.1 that announce over HTTP from
// 127.0.0.1, as the reference load generator's publishers do from one
// address.

// pool is an assigner with default announce limits and the indexer it
// assigns to.
type pool struct {
	a       *assignernode.Assigner
	url     string // the assigner's announce URL
	findURL string // the indexer's find URL
}

func startPool(t *testing.T) *pool {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	index := memory.New()
	icfg := indexernode.DefaultConfig()
	icfg.Dir, icfg.Store, icfg.Index = t.TempDir(), "", index
	icfg.UseAssigner, icfg.AllowPrivateAddrs = true, true
	icfg.AnnounceRateExempt = loopback(t) // the assigner forwards from loopback
	ix, err := indexernode.New(ctx, icfg, indexernode.Listeners{Find: listen(t), Ingest: listen(t), Admin: listen(t)})
	if err != nil {
		t.Fatal(err)
	}
	ixDone := make(chan error, 1)
	go func() { ixDone <- ix.Run(ctx) }()

	cfg := assignernode.DefaultConfig()
	ia := ix.Addrs()
	cfg.Service.Indexers = []assigner.ServiceIndexer{{ID: "indexer-0", AdminURL: ia.AdminURL(), FindURL: ia.FindURL(), IngestURL: ia.IngestURL()}}
	cfg.AllowPrivateAddrs = true
	a, err := assignernode.New(ctx, cfg, assignernode.Listeners{Announce: listen(t)})
	if err != nil {
		t.Fatal(err)
	}
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for name, done := range map[string]chan error{"assigner": aDone, "indexer": ixDone} {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s Run: %v", name, err)
				}
			case <-time.After(p2pWait):
				t.Errorf("%s Run did not return within %s of cancel", name, p2pWait)
			}
		}
		a.Close()
		ix.Close()
		index.Close()
	})
	p := &pool{a: a, url: a.Addrs().AnnounceURL(), findURL: ia.FindURL()}
	waitUntil(t, "the assigner's startup poll", func() bool {
		snap, err := a.Service().Snapshot(ctx)
		return err == nil && len(snap.Indexers) == 1 && snap.Indexers[0].Known
	})
	return p
}

func loopback(t *testing.T) []netip.Prefix {
	t.Helper()
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
}

// publisher is a chain served over HTTP by an ipnisync publisher on
// 127.0.0.1, its head signed by its key.
type publisher struct {
	id    peer.ID
	chain *chaingen.Chain
	addr  multiaddr.Multiaddr
	heads atomic.Int64 // head requests served
}

// newPublisher serves a chain of ads ads (one multihash each) of seed;
// gate, when not nil, holds every head request until it is closed.
func newPublisher(t *testing.T, seed uint64, ads int, gate <-chan struct{}) *publisher {
	t.Helper()
	chain, err := chaingen.Generate(chaingen.Config{Seed: seed, Ads: ads, MhsPerAd: 1})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ipnisync.NewPublisher(chain.PublisherKey, ipnisync.BlockSourceFunc(chain.Block))
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(t.Context(), chain.Head()); err != nil {
		t.Fatal(err)
	}
	p := &publisher{chain: chain}
	if p.id, err = peer.IDFromPrivateKey(chain.PublisherKey); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ipnisync.IPNIPath+"/head" {
			p.heads.Add(1)
			if gate != nil {
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
		}
		pub.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.addr = multiaddr.StringCast("/ip4/127.0.0.1/tcp/" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port) + "/http")
	return p
}

// put PUTs an announce of c by publisher id at addr to u, as go-libipni's
// httpsender does, and returns the status and Retry-After.
func put(t *testing.T, hc *http.Client, u string, id peer.ID, c cid.Cid, addr multiaddr.Multiaddr) (int, string) {
	t.Helper()
	m := announce.Message{Cid: c, Addrs: []multiaddr.Multiaddr{addr.Encapsulate(multiaddr.StringCast("/p2p/" + id.String()))}}
	body, err := m.EncodeCBOR()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, u+"/announce", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// spendSource announces publishers that do not exist (new keys, an
// address nothing listens on) to u, one after the other, until one is
// answered 429, and returns how many were taken before it, that answer's
// Retry-After, and the time from before the first announce to the 429.
// The source's budget is a token bucket: it lets through its burst and
// then no more than the rate has refilled since the first announce, so
// taking more than that by now fails the test at once. A 429 comes as
// soon as the announces are sent faster than the rate refills.
func spendSource(t *testing.T, hc *http.Client, u string) (taken int, retry string, took time.Duration) {
	t.Helper()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	addr := multiaddr.StringCast("/ip4/127.0.0.1/tcp/" + strconv.Itoa(dead.Listener.Addr().(*net.TCPAddr).Port) + "/http")
	burst := netlimit.NewPublisherBurst(netlimit.DefaultAnnounceRate)
	start := time.Now()
	for {
		st, ra := put(t, hc, u, newPeerID(t), randCid(t), addr)
		took = time.Since(start)
		switch {
		case st == http.StatusTooManyRequests:
			return taken, ra, took
		case st != http.StatusNoContent:
			t.Fatalf("announce %d of a new publisher: %d, want 204 or 429", taken+1, st)
		}
		taken++
		if most := burst + refill(took); taken > most {
			t.Fatalf("%d announces of new publishers from one address taken in %v, want at most %d (%d at once, and %v a second)",
				taken, took.Round(time.Millisecond), most, burst, netlimit.DefaultAnnounceRate)
		}
		if took > spendWait {
			t.Fatalf("%d announces of new publishers taken in %v and none refused: each took longer than the rate takes to refill a token", taken, took.Round(time.Millisecond))
		}
	}
}

// spendWait bounds spendSource: announces are sent at hundreds a second,
// so the budget is spent within a second or two.
const spendWait = time.Minute

// refill is how many announces the default rate lets through in d beyond
// its burst, and one for the rounding.
func refill(d time.Duration) int { return int(d.Seconds()*netlimit.DefaultAnnounceRate) + 1 }

// assigned reports whether the assigner's state has p held by an indexer.
func (p *pool) assigned(t *testing.T, id peer.ID) bool {
	t.Helper()
	snap, err := p.a.Service().Snapshot(t.Context())
	if err != nil {
		return false
	}
	for _, ps := range snap.Publishers {
		if ps.Publisher == id && len(ps.Assignments) > 0 {
			return true
		}
	}
	return false
}

// found reports whether the indexer's find API answers 200 for the
// multihash of ordinal ord of chain seed.
func (p *pool) found(t *testing.T, seed, ord uint64) bool {
	t.Helper()
	mh := multihash.Multihash(chaingen.AppendMultihash(nil, seed, ord))
	resp, err := http.Get(p.findURL + "/multihash/" + mh.B58String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Thirty new publishers behind one address announce at once, as the
// reference load generator's do: with the default -announce-rate every
// announce is taken (204: go-libipni's sender gives up on anything else),
// every publisher is verified and assigned, and the indexer ingests each.
func TestAnnounceBurstOfNewPublishers(t *testing.T) {
	const n = 30
	p := startPool(t)
	pubs := make([]*publisher, n)
	for i := range pubs {
		pubs[i] = newPublisher(t, uint64(1000+i), 1, nil)
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i, pub := range pubs {
		wg.Go(func() { statuses[i], _ = put(t, hc, p.url, pub.id, pub.chain.Head(), pub.addr) })
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusNoContent {
			t.Errorf("announce of publisher %d: %d, want 204", i, st)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	start := time.Now()
	waitUntil(t, "every publisher assigned and ingested", func() bool {
		for i, pub := range pubs {
			if !p.assigned(t, pub.id) || !p.found(t, uint64(1000+i), 0) {
				return false
			}
		}
		return true
	})
	t.Logf("%d publishers announced at once from one address: assigned and ingested in %v; receiver %+v", n, time.Since(start), p.a.Service().Receiver().Stats())
}

// Publishers that never verified share the budget of their source:
// ten seconds' worth of -announce-rate at once (100), then 429 with a
// Retry-After. The budget refills as the announces are sent (under -race
// on a loaded machine a pause of 100 ms refills a token), so the test
// sends until the first 429 and checks the bucket's arithmetic against
// the time that took rather than a fixed count.
func TestAnnounceSourceLimitForNewPublishers(t *testing.T) {
	p := startPool(t)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	rate := netlimit.DefaultAnnounceRate
	taken, retry, took := spendSource(t, hc, p.url)
	t.Logf("source budget spent after %d new publishers in %v", taken, took.Round(time.Millisecond))
	if want := netlimit.NewPublisherBurst(rate); taken < want || taken > want+refill(took) {
		t.Errorf("first 429 after %d announces of new publishers from one address in %v, want %d (ten seconds at -announce-rate %v) to %d (refilled while sending)",
			taken, took.Round(time.Millisecond), want, rate, want+refill(took))
	}
	// The bucket refuses with less than a token, which the rate refills
	// within 1/rate; Retry-After is in whole seconds, at least 1.
	if secs, err := strconv.Atoi(retry); err != nil || secs < 1 || secs > int(math.Ceil(1/rate)) {
		t.Errorf("429 with Retry-After %q, want whole seconds from 1 to %v", retry, math.Ceil(1/rate))
	}
	if rs := p.a.Service().Receiver().Stats(); rs.RateLimited != 1 {
		t.Errorf("receiver stats %+v: %d announces counted as over the source's rate, want the one answered 429", rs, rs.RateLimited)
	}
}

// The announces of a publisher the assigner knows are limited per
// publisher, not by their source's budget, which publishers that never
// verified have used up; those of a publisher whose head is being
// verified are coalesced: taken without a limit, and only the newest goes
// on once it verifies, with one head fetch.
func TestAnnounceLimitsOfKnownPublishers(t *testing.T) {
	const burst = 50
	p := startPool(t)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	// P is assigned.
	known := newPublisher(t, 2001, burst+1, nil)
	if st, _ := put(t, hc, p.url, known.id, known.chain.Ads[0], known.addr); st != http.StatusNoContent {
		t.Fatalf("first announce of the known publisher: %d, want 204", st)
	}
	waitUntil(t, "the known publisher assigned", func() bool { return p.assigned(t, known.id) })

	// Q's head check hangs until released.
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	pending := newPublisher(t, 2002, burst+1, gate)
	if st, _ := put(t, hc, p.url, pending.id, pending.chain.Ads[0], pending.addr); st != http.StatusNoContent {
		t.Fatalf("first announce of the pending publisher: %d, want 204", st)
	}
	waitUntil(t, "the pending publisher's head check", func() bool { return pending.heads.Load() == 1 })

	// Publishers that never verified use up the source's budget.
	taken, _, _ := spendSource(t, hc, p.url)
	spentAt := time.Now() // the last found the budget spent
	t.Logf("source budget spent after %d new publishers", taken)
	// A new publisher now is refused, unless it finds a token refilled
	// since (a loaded machine's announces are slow): at most as many as
	// the rate refills are taken before one is refused.
	for taken := 0; ; taken++ {
		st, _ := put(t, hc, p.url, newPeerID(t), randCid(t), known.addr)
		if st == http.StatusTooManyRequests {
			break
		}
		if st != http.StatusNoContent || taken >= refill(time.Since(spentAt)) {
			t.Fatalf("new publisher %d after the budget is spent: %d, want 429 (or 204 for at most the %d refilled since)", taken+1, st, refill(time.Since(spentAt)))
		}
	}

	// P announces every ad at once: its own budget (20 at once) is taken.
	ok, limited := 0, 0
	start := time.Now()
	for i := 1; i <= burst; i++ {
		switch st, retry := put(t, hc, p.url, known.id, known.chain.Ads[i], known.addr); st {
		case http.StatusNoContent:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if retry == "" {
				t.Errorf("announce %d of the known publisher: 429 without Retry-After", i)
			}
		default:
			t.Errorf("announce %d of the known publisher: %d, want 204 or 429", i, st)
		}
	}
	refilled := refill(time.Since(start))
	t.Logf("known publisher: %d of %d announces taken, %d answered 429", ok, burst, limited)
	if want := netlimit.Burst(netlimit.DefaultAnnounceRate); ok < want || ok > want+refilled {
		t.Errorf("known publisher: %d of %d announces taken after its source's budget was spent, want its own budget, %d (and at most %d refilled)", ok, burst, want, refilled)
	}
	if rs := p.a.Service().Receiver().Stats(); rs.PublisherLimited != uint64(limited) {
		t.Errorf("receiver counted %d announces over the publisher limit, the sender got %d 429s", rs.PublisherLimited, limited)
	}

	// Q announces every ad while its head is being checked: all taken.
	for i := 1; i <= burst; i++ {
		if st, _ := put(t, hc, p.url, pending.id, pending.chain.Ads[i], pending.addr); st != http.StatusNoContent {
			t.Errorf("announce %d of the pending publisher: %d, want 204", i, st)
		}
	}
	if rs := p.a.Service().Receiver().Stats(); rs.Coalesced < burst {
		t.Errorf("receiver stats %+v: want at least %d coalesced", rs, burst)
	}
	waitUntil(t, "the service to coalesce every announce", func() bool { return p.a.Service().Stats().Coalesced == burst })
	if n := pending.heads.Load(); n != 1 {
		t.Errorf("the pending publisher's head was fetched %d times by the assigner, want once", n)
	}
	release()
	waitUntil(t, "the pending publisher assigned and its newest ad ingested", func() bool {
		return p.assigned(t, pending.id) && p.found(t, 2002, burst)
	})
	if st := p.a.Service().Stats(); st.Verified != 2 {
		t.Errorf("service stats %+v: want 2 verified", st)
	}
}

func newPeerID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func randCid(t *testing.T) cid.Cid {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	mh, err := multihash.Sum(b, multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.DagJSON, mh)
}
