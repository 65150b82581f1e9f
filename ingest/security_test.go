package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// serveChain serves chain over ipnisync HTTP, its head signed by key (the
// chain's publisher key when nil), with head as the head (the chain's when
// Undef), and returns the server's multiaddr and the publisher.
func serveChain(t testing.TB, chain *chaingen.Chain, key crypto.PrivKey, head cid.Cid, extra map[cid.Cid][]byte) (multiaddr.Multiaddr, *ipnisync.Publisher) {
	t.Helper()
	if key == nil {
		key = chain.PublisherKey
	}
	if !head.Defined() {
		head = chain.Head()
	}
	src := ipnisync.BlockSourceFunc(func(ctx context.Context, c cid.Cid) ([]byte, error) {
		if b, ok := extra[c]; ok {
			return b, nil
		}
		b, err := chain.Block(ctx, c)
		if err != nil {
			return nil, ipnisync.ErrNotFound
		}
		return b, nil
	})
	pub, err := ipnisync.NewPublisher(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pub)
	t.Cleanup(srv.Close)
	return httpAddr(t, srv.URL), pub
}

func httpAddr(t testing.TB, rawURL string) multiaddr.Multiaddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", strings.TrimPrefix(rawURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := manet.FromNetAddr(a)
	if err != nil {
		t.Fatal(err)
	}
	return tcp.Encapsulate(multiaddr.StringCast("/http"))
}

// newHTTPIngester makes an Ingester whose Syncers are real ipnisync HTTP
// clients of the announced addresses, which verify heads against the
// publisher, as a node's are.
func newHTTPIngester(t testing.TB, st store.Store, ds datastore.Batching, opts ...ingest.Option) *ingest.Ingester {
	t.Helper()
	hs := &httpSyncers{}
	t.Cleanup(hs.close)
	ing, err := ingest.New(st, ds, hs.syncer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ing
}

// keysOf lists the datastore keys that mention publisher.
func keysOf(t testing.TB, ds datastore.Batching, publisher peer.ID) []string {
	t.Helper()
	res, err := ds.Query(context.Background(), query.Query{KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := res.Rest()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range all {
		if strings.Contains(e.Key, publisher.String()) {
			out = append(out, e.Key)
		}
	}
	return out
}

// An announce naming a real publisher but pointing at another server (whose
// head is signed by another key, over an unsigned chain) is ignored: the
// publisher's verified addresses stay, no walk state is written, and the
// publisher keeps being ingested from where it really is.
func TestAnnounceIsAHint(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 501, Ads: 20, MhsPerAd: 10, ChunkSize: 5})
	good, goodPub := serveChain(t, chain, nil, cid.Undef, nil)

	// The attacker's chain: an unsigned ad claiming the publisher's
	// provider, on top of the real head, signed (the head) by the attacker.
	attacker, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := topAd(t, chain, nil, func(*schema.Advertisement, *overlay) {})
	evil, _ := serveChain(t, chain, attacker, o.head, o.blocks)

	st := memory.New()
	defer st.Close()
	ds := newDS()
	ing := newHTTPIngester(t, st, ds, ingest.WithUnsignedAds()) // even a node that accepts unsigned ads
	if err := ing.Sync(ctx, chain.Publisher, []multiaddr.Multiaddr{good}, cid.Undef); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)

	// The hijack: the attacker's address and head.
	err = ing.Sync(ctx, chain.Publisher, []multiaddr.Multiaddr{evil}, o.head)
	if err != nil {
		t.Fatalf("sync after a bad announce: %v (the verified addresses still work)", err)
	}
	s, _ := ing.Status(chain.Publisher)
	if len(s.Addrs) != 1 || !s.Addrs[0].Equal(good) || !s.LastHead.Equals(chain.Head()) || s.Walking || s.Head.Defined() {
		t.Fatalf("status after a bad announce: %+v; want addrs %s, last head %s, no walk", s, good, chain.Head())
	}
	equalModel(t, chain.Model(), st)

	// The same through Run, and then a restart: the stored addresses are
	// the good ones, and the publisher's next ads come from there.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ing.Run(runCtx) }()
	if err := ing.Announce(chain.Publisher, []multiaddr.Multiaddr{evil}, o.head); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bad announce to be handled", func() bool {
		s, _ := ing.Status(chain.Publisher)
		return !s.Walking && !s.Announced.Defined()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := chain.Extend(5); err != nil {
		t.Fatal(err)
	}
	if err := goodPub.SetHead(ctx, chain.Head()); err != nil {
		t.Fatal(err)
	}
	again := newHTTPIngester(t, st, ds)
	if err := again.Sync(ctx, chain.Publisher, nil, cid.Undef); err != nil {
		t.Fatalf("sync from the stored addresses after a restart: %v", err)
	}
	equalModel(t, chain.Model(), st)
}

// An announce of a publisher whose head does not verify writes nothing; the
// publisher is held in memory with its error until a new one needs the
// room; too many waiting unverified publishers are refused, and they expire.
func TestUnverifiedPublishersBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A server that answers every head with another key's signature.
	chain := generate(t, chaingen.Config{Seed: 502, Ads: 3, MhsPerAd: 4})
	stranger, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _ := serveChain(t, chain, stranger, cid.Undef, nil)
	dead := multiaddr.StringCast("/ip4/127.0.0.1/tcp/1/http") // nothing listens on port 1

	st := memory.New()
	defer st.Close()
	ds := newDS()
	ing := newHTTPIngester(t, st, ds, ingest.WithUnverifiedLimit(8, time.Hour), ingest.WithRequestTimeout(2*time.Second))
	var fakes []peer.ID
	for n := range 8 {
		id := peerID(t, fmt.Sprintf("fake-%d", n))
		fakes = append(fakes, id)
		addr := wrongKey
		if n%2 == 1 {
			addr = dead
		}
		if err := ing.Announce(id, []multiaddr.Multiaddr{addr}, chain.Head()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ing.Announce(peerID(t, "one too many"), []multiaddr.Multiaddr{wrongKey}, cid.Undef); !errors.Is(err, ingest.ErrTooManyPublishers) {
		t.Fatalf("announce beyond the unverified limit: %v, want ErrTooManyPublishers", err)
	}
	// A publisher known already is not refused.
	if err := ing.Announce(fakes[0], nil, cid.Undef); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	waitFor(t, "every fake publisher to fail", func() bool {
		for _, st := range ing.Statuses() {
			if st.LastError == nil || st.Walking || st.Announced.Defined() {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, st := range ing.Statuses() {
		if !errors.Is(st.LastError, ingest.ErrUnverified) || st.Verified || len(st.Addrs) != 0 {
			t.Errorf("fake publisher's status %+v: want an ErrUnverified error, unverified, no address", st)
		}
	}
	for _, id := range fakes {
		if ks := keysOf(t, ds, id); len(ks) != 0 {
			t.Errorf("datastore keeps %v of a publisher that never verified", ks)
		}
	}
	// Those that failed make room for new ones; still at most 8 held.
	if err := ing.Announce(peerID(t, "one too many"), []multiaddr.Multiaddr{wrongKey}, cid.Undef); err != nil {
		t.Fatal(err)
	}
	if n := len(ing.Statuses()); n != 8 {
		t.Fatalf("%d publishers held, want 8", n)
	}

	// Expiry: with a short TTL, publishers waiting for a walk (Run is not
	// running) are forgotten and make room.
	short := newHTTPIngester(t, st, newDS(), ingest.WithUnverifiedLimit(2, 50*time.Millisecond))
	for n := range 2 {
		if err := short.Announce(peerID(t, fmt.Sprintf("short-%d", n)), []multiaddr.Multiaddr{dead}, cid.Undef); err != nil {
			t.Fatal(err)
		}
	}
	if err := short.Announce(peerID(t, "short-2"), []multiaddr.Multiaddr{dead}, cid.Undef); !errors.Is(err, ingest.ErrTooManyPublishers) {
		t.Fatalf("third announce: %v, want ErrTooManyPublishers", err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := short.Announce(peerID(t, "short-2"), []multiaddr.Multiaddr{dead}, cid.Undef); err != nil {
		t.Fatalf("announce after the others expired: %v", err)
	}
	if n := len(short.Statuses()); n != 1 {
		t.Fatalf("%d publishers held after expiry, want 1", n)
	}
}

// An advertisement that does not verify is met while collecting, before
// anything of it is kept: the walk is abandoned, the last good state stays,
// and a newer verified head that does not go through the bad ad is
// ingested.
func TestBadAdAbandonsWalk(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 503, Ads: 12, MhsPerAd: 10, ChunkSize: 4, RemoveEvery: 5})
	st := memory.New()
	defer st.Close()
	ds := newDS()
	srcs := newSources()
	ing := newIngester(t, st, ds, srcs)
	src := &switchable{s: chain.Source()}
	srcs.set(chain.Publisher, src)
	if err := ing.Sync(ctx, chain.Publisher, testAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	goodHead := chain.Head()

	// Five good ads, then an unsigned one, then five good ones on top.
	if err := chain.Extend(5); err != nil {
		t.Fatal(err)
	}
	bad := topAd(t, chain, nil, func(*schema.Advertisement, *overlay) {})
	top := bad
	for n := range 5 {
		top = topAdOver(t, chain, top, fmt.Sprintf("over-%d", n))
	}
	src.set(top)
	err := ing.Sync(ctx, chain.Publisher, nil, cid.Undef)
	if !errors.Is(err, ingest.ErrSignature) {
		t.Fatalf("walk over an unsigned ad: %v, want ErrSignature", err)
	}
	s, _ := ing.Status(chain.Publisher)
	if !s.LastHead.Equals(goodHead) || s.Head.Defined() || s.Pending != 0 {
		t.Fatalf("after the bad walk: %+v; want last head %s and no walk in progress", s, goodHead)
	}
	for _, k := range keysOf(t, ds, chain.Publisher) {
		if strings.Contains(k, "/q/") || strings.Contains(k, "/seen/") || strings.HasPrefix(k, "/walking/") {
			t.Errorf("abandoned walk left %s", k)
		}
	}
	if _, err := st.Provider(ctx, chain.Provider); err != nil {
		t.Fatal(err)
	}
	info, _ := st.Provider(ctx, chain.Provider)
	if info.LastError != "" {
		t.Errorf("an ad that did not verify wrote the provider's LastError: %q", info.LastError)
	}
	// The store is as it was before the bad walk: the first 12 ads.
	equalModel(t, chain.ModelAt(11), providerView{st, chain.Provider})

	// The publisher fixes its chain: the chain's own head (the five good
	// ads after the first walk) becomes the head again.
	src.set(chain.Source())
	if err := ing.Sync(ctx, chain.Publisher, nil, cid.Undef); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
}

// switchable is a Syncer whose source a test replaces, as a publisher that
// changes what it serves.
type switchable struct {
	mu sync.Mutex
	s  ingest.Syncer
}

func (w *switchable) set(s ingest.Syncer) {
	w.mu.Lock()
	w.s = s
	w.mu.Unlock()
}

func (w *switchable) get() ingest.Syncer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

func (w *switchable) Head(ctx context.Context) (cid.Cid, error) { return w.get().Head(ctx) }

func (w *switchable) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	return w.get().Block(ctx, c)
}

// topAdOver is topAd over another overlay: a signed NoEntries ad on top of
// under's head.
func topAdOver(t testing.TB, chain *chaingen.Chain, under *overlay, ctxID string) *overlay {
	t.Helper()
	o := &overlay{base: under, blocks: make(map[cid.Cid][]byte)}
	ad := &schema.Advertisement{
		PreviousID: under.head,
		Provider:   chain.Provider.String(),
		Addresses:  chain.Addrs,
		Entries:    schema.NoEntries,
		ContextID:  []byte(ctxID),
		Metadata:   []byte{0x80, 0x12, 0x00},
	}
	if err := ad.Sign(chain.ProviderKey); err != nil {
		t.Fatal(err)
	}
	block, c, err := ad.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o.blocks[c], o.head = block, c
	return o
}

// A first walk may hold only so many bytes of advertisements pending; a
// longer chain is abandoned with ErrSpillLimit and leaves nothing behind.
func TestSpillLimit(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 504, Ads: 40, MhsPerAd: 2})
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	st := memory.New()
	defer st.Close()
	ds := newDS()
	ing := newIngester(t, st, ds, srcs, ingest.WithSpillLimits(1<<30, 8<<10))
	err := ing.Sync(ctx, chain.Publisher, testAddrs, cid.Undef)
	if !errors.Is(err, ingest.ErrSpillLimit) {
		t.Fatalf("first walk of 40 ads within 8 KiB: %v, want ErrSpillLimit", err)
	}
	for _, k := range keysOf(t, ds, chain.Publisher) {
		if strings.Contains(k, "/q/") || strings.Contains(k, "/seen/") || strings.HasPrefix(k, "/walking/") {
			t.Errorf("abandoned walk left %s", k)
		}
	}
	if s, _ := ing.Status(chain.Publisher); s.Head.Defined() || s.LastHead.Defined() {
		t.Fatalf("status %+v after an abandoned first walk", s)
	}
	// A publisher with a finished walk gets the larger limit.
	ing2 := newIngester(t, st, newDS(), srcs, ingest.WithSpillLimits(1<<30, 1<<30))
	if err := ing2.Sync(ctx, chain.Publisher, testAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	equalModel(t, chain.Model(), st)
}

// slowSource serves a chain with a delay before every block.
type slowSource struct {
	ingest.Syncer
	delay time.Duration
}

func (s slowSource) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Syncer.Block(ctx, c)
}

// Twenty slow but valid publishers, announced first, take every worker
// they can; an honest publisher announced after them still completes
// within a few slots, new or established.
func TestFairSlowPublishers(t *testing.T) {
	for _, established := range []bool{false, true} {
		t.Run(fmt.Sprintf("established=%v", established), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srcs := newSources()
			st := memory.New()
			defer st.Close()
			honest := generate(t, chaingen.Config{Seed: 600, Ads: 30, MhsPerAd: 10})
			srcs.set(honest.Publisher, honest.Source())
			const slot = 200 * time.Millisecond
			ing := newIngester(t, st, newDS(), srcs, ingest.WithSlot(slot, 1_000_000), ingest.WithMinTransferRate(0, time.Second))
			if established {
				if err := ing.Sync(ctx, honest.Publisher, testAddrs, cid.Undef); err != nil {
					t.Fatal(err)
				}
				if err := honest.Extend(20); err != nil {
					t.Fatal(err)
				}
			}
			var slow []*chaingen.Chain
			for n := range 20 {
				c := generate(t, chaingen.Config{Seed: uint64(700 + n), Ads: 600, MhsPerAd: 1})
				srcs.set(c.Publisher, slowSource{Syncer: c.Source(), delay: 40 * time.Millisecond}) // 24 s a chain
				slow = append(slow, c)
			}
			done := make(chan error, 1)
			go func() { done <- ing.Run(ctx) }()
			for _, c := range slow {
				if err := ing.Announce(c.Publisher, testAddrs, cid.Undef); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "slow publishers to hold the workers", func() bool {
				n := 0
				for _, s := range ing.Statuses() {
					if s.Walking {
						n++
					}
				}
				return n >= ingest.DefaultWorkers/2
			})
			start := time.Now()
			if err := ing.Announce(honest.Publisher, testAddrs, cid.Undef); err != nil {
				t.Fatal(err)
			}
			// With 5 workers open to new publishers, a slot of 200 ms and
			// 20 publishers ahead, the honest one waits about 4 slots (under
			// a second); without slots it would wait for a slow chain to end
			// (24 s). The bound leaves room for a loaded machine.
			const bound = 10 * time.Second
			for {
				s, _ := ing.Status(honest.Publisher)
				if s.LastHead.Equals(honest.Head()) {
					break
				}
				if time.Since(start) > bound {
					t.Fatalf("the honest publisher is not ingested %v after its announce: %+v", bound, s)
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("honest publisher ingested %v after its announce", time.Since(start).Round(time.Millisecond))
			equalModel(t, honest.Model(), providerView{st, honest.Provider})
			// The slow ones progress too: every one has walked some ads.
			waitFor(t, "every slow publisher to have had a slot", func() bool {
				for _, c := range slow {
					if s, _ := ing.Status(c.Publisher); s.AdsWalked == 0 {
						return false
					}
				}
				return true
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A publisher that sends less than the minimum rate is stopped with
// ErrTooSlow and backs off; its backoff survives a restart.
func TestMinTransferRateAndPersistedBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chain := generate(t, chaingen.Config{Seed: 800, Ads: 50, MhsPerAd: 1})
	srcs := newSources()
	srcs.set(chain.Publisher, slowSource{Syncer: chain.Source(), delay: 20 * time.Millisecond})
	st := memory.New()
	defer st.Close()
	ds := newDS()
	ing := newIngester(t, st, ds, srcs, ingest.WithMinTransferRate(1<<20, 100*time.Millisecond), ingest.WithBackoff(time.Hour, time.Hour))
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	if err := ing.Announce(chain.Publisher, testAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow publisher to fail", func() bool {
		s, _ := ing.Status(chain.Publisher)
		return s.LastError != nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s, _ := ing.Status(chain.Publisher)
	if !errors.Is(s.LastError, ingest.ErrTooSlow) || s.Failures != 1 {
		t.Fatalf("status %+v: want one failure wrapping ErrTooSlow", s)
	}
	again := newIngester(t, st, ds, srcs)
	if _, err := again.Walker(chain.Publisher); err != nil {
		t.Fatal(err)
	}
	s2, _ := again.Status(chain.Publisher)
	if s2.Failures != 1 || s2.RetryAt.Sub(s.RetryAt).Abs() > time.Millisecond {
		t.Fatalf("after a restart: failures %d retry at %v; want 1 and %v", s2.Failures, s2.RetryAt, s.RetryAt)
	}
}

// peerID derives a peer ID from label, for publishers that need no key.
func peerID(t testing.TB, label string) peer.ID {
	t.Helper()
	seed := sha256.Sum256([]byte(label))
	key, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
