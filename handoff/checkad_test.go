package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// httpPublisher is a real ipnisync publisher of chain on 127.0.0.1 that
// also holds the blocks of others (a publisher may serve blocks it did
// not sign), and counts the requests it gets.
type httpPublisher struct {
	addr     multiaddr.Multiaddr
	requests atomic.Int32
}

func newHTTPPublisher(t *testing.T, chain *chaingen.Chain, others ...*chaingen.Chain) *httpPublisher {
	t.Helper()
	all := append([]*chaingen.Chain{chain}, others...)
	src := ipnisync.BlockSourceFunc(func(ctx context.Context, c cid.Cid) ([]byte, error) {
		for _, ch := range all {
			if b, err := ch.Block(ctx, c); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("%s: %w", c, ipnisync.ErrNotFound)
	})
	pub, err := ipnisync.NewPublisher(chain.PublisherKey, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.SetHead(context.Background(), chain.Head()); err != nil {
		t.Fatal(err)
	}
	p := &httpPublisher{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		pub.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.addr = tcpHTTPAddr(t, srv.Listener.Addr())
	return p
}

func tcpHTTPAddr(t *testing.T, a net.Addr) multiaddr.Multiaddr {
	t.Helper()
	ta := a.(*net.TCPAddr)
	return multiaddr.StringCast(fmt.Sprintf("/ip4/%s/tcp/%d/http", ta.IP, ta.Port))
}

// httpSyncer is a node's SyncerFunc: an ipnisync client from the
// addresses (CheckAd closes it).
func httpSyncer(p peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
	return ipnisync.New(peer.AddrInfo{ID: p, Addrs: addrs}, ipnisync.WithDialPolicy(privatePool))
}

// TestHandoffChecksFrozenAt runs the receiver over a real ingest.Ingester
// against a real ipnisync HTTP publisher: a FrozenAt that is not an ad of
// the publisher is refused with ErrBadFrozenAt before anything changes
// (walker state, provider records, assignment); a publisher that cannot
// be reached refuses it with ErrPublisherUnreachable; a genuine one
// passes and becomes the walk's last head.
func TestHandoffChecksFrozenAt(t *testing.T) {
	ctx := context.Background()
	gen := func(cfg chaingen.Config) *chaingen.Chain {
		c, err := chaingen.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	chain := gen(chaingen.Config{Seed: 41, Ads: 6, MhsPerAd: 3, PublisherSigns: true})
	// Another publisher's chain, signed by that publisher's key.
	foreign := gen(chaingen.Config{Seed: 42, Ads: 2, MhsPerAd: 3, PublisherSigns: true})
	// A chain whose provider signs: its ads verify whoever serves them.
	stranger := gen(chaingen.Config{Seed: 43, Ads: 2, MhsPerAd: 3})
	pub := newHTTPPublisher(t, chain, foreign, stranger)

	// A port nothing listens on: the publisher is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := tcpHTTPAddr(t, ln.Addr())
	ln.Close()

	ad2, err := chain.Ad(2)
	if err != nil {
		t.Fatal(err)
	}
	mh, _ := multihash.Sum([]byte("not an ad"), multihash.SHA2_256, -1)
	random := cid.NewCidV1(cid.DagJSON, mh)
	frozenTime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	record := func(prov peer.ID, frozenAt cid.Cid, addr multiaddr.Multiaddr) refProvider {
		return refFromStore(store.ProviderInfo{
			AddrInfo:  peer.AddrInfo{ID: prov, Addrs: maddrs("/ip4/127.0.0.1/tcp/9")},
			Publisher: peer.AddrInfo{ID: chain.Publisher, Addrs: []multiaddr.Multiaddr{addr}},
			FrozenAt:  frozenAt, FrozenAtTime: frozenTime,
		})
	}

	for _, tc := range []struct {
		name string
		recs []refProvider
		want error // nil: the handoff succeeds
	}{{
		name: "genuine FrozenAt",
		recs: []refProvider{record(chain.Provider, chain.Ads[3], pub.addr)},
	}, {
		name: "random CID",
		recs: []refProvider{record(chain.Provider, random, pub.addr)},
		want: handoff.ErrBadFrozenAt,
	}, {
		name: "another publisher's ad, signed by another key",
		recs: []refProvider{record(chain.Provider, foreign.Ads[1], pub.addr)},
		want: handoff.ErrBadFrozenAt,
	}, {
		name: "validly signed ad of a provider not listed",
		recs: []refProvider{record(chain.Provider, stranger.Ads[1], pub.addr)},
		want: handoff.ErrBadFrozenAt,
	}, {
		name: "an entry chunk, not an ad",
		recs: []refProvider{record(chain.Provider, ad2.Entries, pub.addr)},
		want: handoff.ErrBadFrozenAt,
	}, {
		name: "one good FrozenAt and one bad",
		recs: []refProvider{
			record(chain.Provider, chain.Ads[4], pub.addr),
			record(peerID(t, "second provider"), random, pub.addr),
		},
		want: handoff.ErrBadFrozenAt,
	}, {
		name: "publisher down",
		recs: []refProvider{record(chain.Provider, chain.Ads[3], down)},
		want: handoff.ErrPublisherUnreachable,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			node := newFrozenNode(t, tc.recs...)
			st := memory.New()
			defer st.Close()
			ing, err := ingest.New(st, newMapDS(), httpSyncer)
			if err != nil {
				t.Fatal(err)
			}
			// The receiver had walked the publisher up to ad 1 before.
			w, err := ing.Walker(chain.Publisher)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Reset(ctx, chain.Ads[1]); err != nil {
				t.Fatal(err)
			}
			before, err := w.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r := newReceiver(t, st, handoff.FromIngester(ing), newMapDS())

			err = r.Handoff(ctx, chain.Publisher, handoff.Request{FrozenID: peerID(t, "frozen"), FrozenURL: node.URL})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if s, err := w.State(ctx); err != nil || !s.LastHead.Equals(chain.Ads[3]) {
					t.Fatalf("walker state %+v (%v), want LastHead ad 3", s, err)
				}
				if _, err := st.Provider(ctx, chain.Provider); err != nil {
					t.Fatalf("provider not registered: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Handoff: %v, want %v", err, tc.want)
			}
			if s, err := w.State(ctx); err != nil || s != before {
				t.Errorf("walker state %+v (%v), want %+v unchanged", s, err, before)
			}
			for info, err := range st.Providers(ctx) {
				t.Errorf("provider record written: %+v, %v", info, err)
			}
			checkAssignments(t, r.Registry(), nil)
			if s, ok := ing.Status(chain.Publisher); ok && s.Announced.Defined() {
				t.Errorf("publisher announced to ingestion: %+v", s)
			}
			// Refused, the publisher is free: a good record passes.
			node.setJSON(t, []refProvider{record(chain.Provider, chain.Ads[5], pub.addr)})
			if err := r.Handoff(ctx, chain.Publisher, handoff.Request{FrozenID: peerID(t, "frozen"), FrozenURL: node.URL}); err != nil {
				t.Fatalf("handoff after the refusal: %v", err)
			}
		})
	}
}

// TestHandoffFrozenIndexers: with WithFrozenIndexers, a FrozenURL that is
// not listed is refused with ErrUnknownIndexer before the frozen indexer
// or the publisher is asked anything; a listed one (written differently)
// passes. The list of WithFrozenIndexersFunc is read at each handoff.
func TestHandoffFrozenIndexers(t *testing.T) {
	ctx := context.Background()
	chain, err := chaingen.Generate(chaingen.Config{Seed: 44, Ads: 3, MhsPerAd: 2, PublisherSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	pub := newHTTPPublisher(t, chain)
	rec := refFromStore(store.ProviderInfo{
		AddrInfo:  peer.AddrInfo{ID: chain.Provider},
		Publisher: peer.AddrInfo{ID: chain.Publisher, Addrs: []multiaddr.Multiaddr{pub.addr}},
		FrozenAt:  chain.Ads[1], FrozenAtTime: time.Now(),
	})
	node := newFrozenNode(t, rec)
	other := newFrozenNode(t, rec) // a frozen indexer outside the pool
	req := func(u string) handoff.Request { return handoff.Request{FrozenID: peerID(t, "frozen"), FrozenURL: u} }
	newRecv := func(opts ...handoff.Option) *handoff.Receiver {
		st := memory.New()
		t.Cleanup(func() { st.Close() })
		ing, err := ingest.New(st, newMapDS(), httpSyncer)
		if err != nil {
			t.Fatal(err)
		}
		return newReceiver(t, st, handoff.FromIngester(ing), newMapDS(), opts...)
	}

	// The pool lists node, in another spelling.
	listed := strings.Replace(node.URL, "http://", "HTTP://", 1) + "/"
	r := newRecv(handoff.WithFrozenIndexers("http://127.0.0.1:1", listed))
	err = r.Handoff(ctx, chain.Publisher, req(other.URL))
	if !errors.Is(err, handoff.ErrUnknownIndexer) {
		t.Fatalf("handoff from an unlisted indexer: %v, want ErrUnknownIndexer", err)
	}
	if n, m := other.requests.Load(), pub.requests.Load(); n != 0 || m != 0 {
		t.Fatalf("refused handoff asked the frozen indexer %d times and the publisher %d times", n, m)
	}
	checkAssignments(t, r.Registry(), nil)
	if err := r.Handoff(ctx, chain.Publisher, req(strings.TrimPrefix(node.URL, "http://"))); err != nil {
		t.Fatalf("handoff from a listed indexer: %v", err)
	}

	// A list read at each handoff: the indexer joins the pool later.
	var pool atomic.Value
	pool.Store([]string{"http://127.0.0.1:1"})
	r = newRecv(handoff.WithFrozenIndexersFunc(func(context.Context) ([]string, error) { return pool.Load().([]string), nil }))
	if err := r.Handoff(ctx, chain.Publisher, req(other.URL)); !errors.Is(err, handoff.ErrUnknownIndexer) {
		t.Fatalf("before joining: %v, want ErrUnknownIndexer", err)
	}
	pool.Store([]string{"http://127.0.0.1:1", other.URL})
	if err := r.Handoff(ctx, chain.Publisher, req(other.URL)); err != nil {
		t.Fatalf("after joining: %v", err)
	}

	// A file read at each handoff (WithFrozenIndexersFile): the operator
	// adds the indexer to it later.
	file := filepath.Join(t.TempDir(), "pool")
	if err := os.WriteFile(file, []byte("# the pool\nhttp://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = newRecv(handoff.WithFrozenIndexersFile(file))
	if err := r.Handoff(ctx, chain.Publisher, req(other.URL)); !errors.Is(err, handoff.ErrUnknownIndexer) {
		t.Fatalf("file, before joining: %v, want ErrUnknownIndexer", err)
	}
	if err := os.WriteFile(file, []byte("http://127.0.0.1:1\n"+other.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Handoff(ctx, chain.Publisher, req(other.URL)); err != nil {
		t.Fatalf("file, after joining: %v", err)
	}
	if err := os.WriteFile(file, []byte("# emptied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Handoff(ctx, chain.Publisher, req(other.URL)); err == nil || !strings.Contains(err.Error(), "no URL") {
		t.Fatalf("file without a URL: %v, want the handoff refused", err)
	}

	// A list that cannot be read fails the handoff.
	r = newRecv(handoff.WithFrozenIndexersFunc(func(context.Context) ([]string, error) { return nil, errors.New("no such file") }))
	if err := r.Handoff(ctx, chain.Publisher, req(node.URL)); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("unreadable list: %v", err)
	}

	for name, opt := range map[string]handoff.Option{
		"no URL":   handoff.WithFrozenIndexers(),
		"bad URL":  handoff.WithFrozenIndexers("ftp://x/y"),
		"nil func": handoff.WithFrozenIndexersFunc(nil),
		"no file":  handoff.WithFrozenIndexersFile(""),
	} {
		reg, _ := handoff.NewRegistry(newMapDS())
		st := memory.New()
		defer st.Close()
		if _, err := handoff.NewReceiver(st, &fakeIngest{}, reg, opt); !errors.Is(err, handoff.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}
