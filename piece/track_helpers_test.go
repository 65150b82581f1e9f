package piece_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/memory"
)

// publisher is a generated chain served by an ipnisync publisher over real
// HTTP on 127.0.0.1.
type publisher struct {
	chain *chaingen.Chain
	srv   *httptest.Server
	pub   *ipnisync.Publisher
	addr  multiaddr.Multiaddr
}

// servePublisher serves chain; with hang, every block request blocks until
// the client gives up (a publisher whose head answers but whose blocks never
// come).
func servePublisher(t *testing.T, cfg chaingen.Config, hang bool) *publisher {
	t.Helper()
	return servePublisherWith(t, cfg, hang, nil)
}

// servePublisherWith is servePublisher with every request going through
// wrap (when not nil) first.
func servePublisherWith(t *testing.T, cfg chaingen.Config, hang bool, wrap func(http.Handler) http.Handler) *publisher {
	t.Helper()
	c, err := chaingen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := ipnisync.BlockSourceFunc(func(ctx context.Context, id cid.Cid) ([]byte, error) {
		b, err := c.Block(ctx, id)
		if errors.Is(err, chaingen.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", ipnisync.ErrNotFound, err)
		}
		return b, err
	})
	p, err := ipnisync.NewPublisher(c.PublisherKey, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetHead(context.Background(), c.Head()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var h http.Handler = p
	if hang {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/head") {
				p.ServeHTTP(w, r)
				return
			}
			select {
			case <-r.Context().Done():
			case <-done:
			}
		})
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { close(done); srv.Close() })
	a, err := multiaddr.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", srv.Listener.Addr().(*net.TCPAddr).Port))
	if err != nil {
		t.Fatal(err)
	}
	return &publisher{chain: c, srv: srv, pub: p, addr: a}
}

// providersEntry is one element of a /providers answer, in the reference's
// JSON shape.
type providersEntry struct {
	AddrInfo          peer.AddrInfo
	LastAdvertisement cid.Cid        `json:",omitempty"`
	Publisher         *peer.AddrInfo `json:",omitempty"`
	ExtendedProviders any            `json:",omitempty"`
}

func (p *publisher) entry() providersEntry {
	e := providersEntry{
		AddrInfo:          peer.AddrInfo{ID: p.chain.Provider, Addrs: []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/1/p2p-circuit")}},
		LastAdvertisement: p.chain.Head(),
		Publisher:         &peer.AddrInfo{ID: p.chain.Publisher, Addrs: []multiaddr.Multiaddr{p.addr}},
		ExtendedProviders: map[string]any{"Providers": []any{}},
	}
	return e
}

// serveProviders serves GET /providers with the entries entries returns.
func serveProviders(t *testing.T, entries func() []providersEntry) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/providers" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(entries())
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newMemory(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// runTracker runs tr until the test ends (or stop is called) and checks Run's
// error.
func runTracker(t *testing.T, tr *piece.Tracker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Run did not return 30 s after its context ended")
			}
			_ = tr.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitFor polls cond every 20 ms for up to d and fails the test with what
// cond last said.
func waitFor(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached after %v: %s", d, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status reads a provider's status, zero if unknown.
func status(s piece.Store, p peer.ID) piece.Status {
	st, _ := s.Status(context.Background(), p)
	return st
}

// upToDate reports whether the provider of pub has walked its whole chain.
func upToDate(s piece.Store, pub *publisher) (bool, string) {
	st := status(s, pub.chain.Provider)
	if st.LastHead.Equals(pub.chain.Head()) && !st.Head.Defined() && st.AdsWalked == int64(pub.chain.Len()) {
		return true, ""
	}
	return false, fmt.Sprintf("provider %s: %+v, want last head %s and %d ads walked", pub.chain.Provider, st, pub.chain.Head(), pub.chain.Len())
}

// checkPieces checks that s answers every (provider, piece) of pub's ground
// truth, except the pieces in skip, as a Tracker reading the first entry
// chunk of each ad (the default) fills it: see checkPiecesChunks.
func checkPieces(t *testing.T, s piece.Store, pub *publisher, k int, skip ...cid.Cid) {
	t.Helper()
	checkPiecesChunks(t, s, pub, k, piece.DefaultEntryChunks, skip...)
}

// checkPiecesChunks checks that s answers every (provider, piece) of pub's
// ground truth, except the pieces in skip: payloads non-empty, a subset of
// the payloads of the first chunks entry chunks of the piece's ads (every
// chunk when chunks is 0), and all of those when there are at most k of
// them, else k.
func checkPiecesChunks(t *testing.T, s piece.Store, pub *publisher, k, chunks int, skip ...cid.Cid) {
	t.Helper()
	ctx := context.Background()
	truth := sampledTruth(t, pub.chain, chunks)
	if len(truth) == 0 {
		t.Fatalf("provider %s: chain has no pieces; the test is broken", pub.chain.Provider)
	}
	for pc, want := range truth {
		if slices.ContainsFunc(skip, pc.Equals) {
			continue
		}
		got, err := s.Payloads(ctx, pub.chain.Provider, pc)
		if err != nil {
			t.Errorf("provider %s piece %s: %v", pub.chain.Provider, pc, err)
			continue
		}
		if len(got) == 0 {
			t.Errorf("provider %s piece %s: no payloads", pub.chain.Provider, pc)
		}
		for _, c := range got {
			if !want[c] {
				t.Errorf("provider %s piece %s: payload %s was not advertised in the chunks read", pub.chain.Provider, pc, c)
			}
		}
		if len(want) <= k && len(got) != len(want) {
			t.Errorf("provider %s piece %s: %d payloads, want all %d", pub.chain.Provider, pc, len(got), len(want))
		}
		if len(want) > k && len(got) != k {
			t.Errorf("provider %s piece %s: %d payloads, want k = %d", pub.chain.Provider, pc, len(got), k)
		}
	}
}

// sampledTruth returns, per piece of c, the payload CIDs of the first
// chunks entry chunks (all with 0) of every ad naming it: what a Tracker
// with WithEntryChunks(chunks) samples. Chunks the chain lost are skipped.
func sampledTruth(t *testing.T, c *chaingen.Chain, chunks int) map[cid.Cid]map[cid.Cid]bool {
	t.Helper()
	ctx := context.Background()
	out := make(map[cid.Cid]map[cid.Cid]bool)
	for i := range c.Len() {
		ad, err := c.Ad(i)
		if err != nil {
			t.Fatal(err)
		}
		if ad.IsRm || !ad.HasEntries() {
			continue
		}
		pc, ok := piece.PieceOf(ad.ContextID, ad.Metadata)
		if !ok {
			continue
		}
		for n, e := 0, ad.Entries; e.Defined() && (chunks == 0 || n < chunks); n++ {
			b, err := c.Block(ctx, e)
			if err != nil {
				break // lost
			}
			ch, err := schema.DecodeEntryChunk(e, b)
			if err != nil {
				t.Fatal(err)
			}
			if out[pc] == nil {
				out[pc] = make(map[cid.Cid]bool)
			}
			for _, mh := range ch.Entries {
				if p, ok := piece.PayloadCID(mh); ok {
					out[pc][p] = true
				}
			}
			e = ch.Next
		}
	}
	return out
}

// requestLog counts a publisher's block requests by CID, optionally
// delaying each.
type requestLog struct {
	delay time.Duration
	mu    sync.Mutex
	n     map[string]int // by the last path element
	total int
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/head") {
			l.mu.Lock()
			if l.n == nil {
				l.n = make(map[string]int)
			}
			l.n[r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]++
			l.total++
			l.mu.Unlock()
			if l.delay > 0 {
				time.Sleep(l.delay)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// count returns the requests of c and of every block.
func (l *requestLog) count(c cid.Cid) (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[c.String()], l.total
}
