package publishernode

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// serve serves p on a test server and returns its multiaddr.
func serve(t *testing.T, p *Publisher) multiaddr.Multiaddr {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	a, err := multiaddr.NewMultiaddr("/ip4/" + host + "/tcp/" + port + "/http")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// privatePool is the dial policy of a pool on this machine: the test
// publishers listen on 127.0.0.1, which the default policy refuses.
var privatePool = func() *netpolicy.Policy {
	p, err := netpolicy.New(netpolicy.AllowPrivate())
	if err != nil {
		panic(err)
	}
	return p
}()

// newIngester returns an Ingester over a fresh memory store that reaches
// publishers over ipnisync HTTP.
func newIngester(t *testing.T) (*ingest.Ingester, store.Store) {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	ing, err := ingest.New(st, dssync.MutexWrap(datastore.NewMapDatastore()),
		func(pub peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
			// The test publishers listen on loopback: a private pool.
			return ipnisync.New(peer.AddrInfo{ID: pub, Addrs: addrs}, ipnisync.WithDialPolicy(privatePool))
		})
	if err != nil {
		t.Fatal(err)
	}
	return ing, st
}

func newPublisher(t *testing.T, spec Spec) *Publisher {
	t.Helper()
	p, err := NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIngestEqualsTruth: an ingester that syncs an honest publisher, ad
// batch by ad batch as it publishes (removals and updates included), holds
// exactly the publisher's ground truth each time; and the truth's digest
// is that of the store.
func TestIngestEqualsTruth(t *testing.T) {
	ctx := t.Context()
	p := newPublisher(t, Spec{Seed: 11, Ads: 3, Entries: 25, ChunkSize: 10, RemoveEvery: 4, UpdateEvery: 3})
	addr := serve(t, p)
	ing, st := newIngester(t)
	for round := range 3 {
		if err := ing.Sync(ctx, p.ID(), []multiaddr.Multiaddr{addr}, p.Head()); err != nil {
			t.Fatalf("round %d: sync: %v", round, err)
		}
		if err := p.Model().Equal(ctx, st); err != nil {
			t.Fatalf("round %d (%d ads): %v", round, p.Ads(), err)
		}
		tr := p.Truth(true)
		if tr.Multihashes != p.Model().Multihashes() || tr.Ads != p.Ads() || tr.Head != p.Head().String() {
			t.Fatalf("round %d: truth %d multihashes, %d ads, head %s; model %d, %d ads, head %s",
				round, tr.Multihashes, tr.Ads, tr.Head, p.Model().Multihashes(), p.Ads(), p.Head())
		}
		if got := Digest(storeEntries(t, st)); got != tr.Digest {
			t.Fatalf("round %d: digest of the store %s, truth %s", round, got, tr.Digest)
		}
		if err := p.Publish(ctx, 4); err != nil {
			t.Fatal(err)
		}
	}
	if p.Ads() != 3+3*4 {
		t.Fatalf("Ads %d, want 15", p.Ads())
	}
}

// storeEntries reads a store back as Entries.
func storeEntries(t *testing.T, st store.Store) []Entry {
	t.Helper()
	var es []Entry
	for e, err := range st.All(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		x := Entry{Multihash: e.Multihash.B58String()}
		for _, v := range e.Values {
			x.Values = append(x.Values, Value{ProviderID: v.ProviderID.String(), ContextID: v.ContextID, Metadata: v.Metadata})
		}
		es = append(es, x)
	}
	return es
}

// TestFaults: each malicious publisher is rejected by the ingester with
// the named error, nothing of it is indexed, and an honest publisher
// ingested by the same ingester is unaffected.
func TestFaults(t *testing.T) {
	ctx := t.Context()
	ing, st := newIngester(t)
	honest := newPublisher(t, Spec{Seed: 1, Ads: 4, Entries: 10, ChunkSize: 4})
	honestAddr := serve(t, honest)
	for i, tc := range []struct {
		fault Fault
		want  []error
	}{
		{BadSignature, []error{ingest.ErrSignature, schema.ErrInvalidSignature}},
		// The ipnisync client checks each block's hash and size as it
		// reads it, so the ingester sees these two as failed fetches.
		{CorruptBlocks, []error{ingest.ErrFetch, ipnisync.ErrHashMismatch}},
		{HugeChunks, []error{ingest.ErrFetch, ipnisync.ErrBlockTooLarge}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			// A seed, hence an identity, of its own: the walker state is
			// per publisher.
			p := newPublisher(t, Spec{Seed: 100 + uint64(i), Ads: 2, Entries: 10, ChunkSize: 4, Fault: tc.fault})
			err := ing.Sync(ctx, p.ID(), []multiaddr.Multiaddr{serve(t, p)}, p.Head())
			var adErr *ingest.AdError
			if !errors.As(err, &adErr) {
				t.Fatalf("sync of a %s publisher: %v, want an *ingest.AdError", tc.fault, err)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("sync of a %s publisher: %v, want it to wrap %v", tc.fault, err, w)
				}
			}
			if tr := p.Truth(false); tr.Multihashes != 0 || tr.Fault != tc.fault || tr.Ads != 2 {
				t.Errorf("truth of a %s publisher: %+v, want no multihashes", tc.fault, tr)
			}
			// The honest one, synced by the same ingester after the faulty
			// one, is all there is in the store.
			if err := honest.Publish(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if err := ing.Sync(ctx, honest.ID(), []multiaddr.Multiaddr{honestAddr}, honest.Head()); err != nil {
				t.Fatalf("honest sync after a %s publisher: %v", tc.fault, err)
			}
			if err := honest.Model().Equal(ctx, st); err != nil {
				t.Fatalf("after a %s publisher: %v", tc.fault, err)
			}
		})
	}
}

// TestHugeChunkIsOverLimit checks that a HugeChunks publisher serves a
// chunk over schema.MaxBlockSize, and that its head and ad are valid.
func TestHugeChunkIsOverLimit(t *testing.T) {
	p := newPublisher(t, Spec{Seed: 3, Ads: 1, Fault: HugeChunks})
	ad, err := p.chain.Ad(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.VerifySignature(); err != nil {
		t.Fatalf("the ad of a huge publisher is not validly signed: %v", err)
	}
	b, err := p.block(t.Context(), ad.Entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) <= schema.MaxBlockSize {
		t.Fatalf("huge chunk is %d bytes, not over %d", len(b), schema.MaxBlockSize)
	}
}

func TestTruthHTTP(t *testing.T) {
	p := newPublisher(t, Spec{Seed: 5, Ads: 2, Entries: 3, ChunkSize: 3})
	srv := httptest.NewServer(p)
	defer srv.Close()
	var tr Truth
	getJSON(t, srv.URL+"/truth?entries=1", &tr)
	want := p.Truth(true)
	if tr.Publisher != want.Publisher || tr.Digest != want.Digest || len(tr.Entries) != 6 || tr.Multihashes != 6 {
		t.Fatalf("GET /truth = %+v, want %+v", tr, want)
	}
	var short Truth
	getJSON(t, srv.URL+"/truth", &short)
	if short.Entries != nil || short.Digest != want.Digest {
		t.Fatalf("GET /truth without entries = %+v", short)
	}
	resp, err := http.Get(srv.URL + "/ipni/v1/ad/head")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET head: %s", resp.Status)
	}
}

// POST /halt halts only for a program on this machine: a DNS-rebound
// page (a foreign Host) gets 421 and a page at another origin 403, and
// the publisher keeps publishing; a plain request to 127.0.0.1 halts it.
func TestHaltLocalOnly(t *testing.T) {
	p := newPublisher(t, Spec{Seed: 5, Ads: 1, Entries: 3, ChunkSize: 3})
	srv := httptest.NewServer(p)
	defer srv.Close()
	halt := func(host, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/halt", nil)
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := halt("rebind.evil.example:3100", ""); code != http.StatusMisdirectedRequest || p.Halted() {
		t.Fatalf("rebound /halt: %d, halted %v; want 421, not halted", code, p.Halted())
	}
	if code := halt("", "http://127.0.0.2:8080"); code != http.StatusForbidden || p.Halted() {
		t.Fatalf("cross-origin /halt: %d, halted %v; want 403, not halted", code, p.Halted())
	}
	if code := halt("", ""); code != http.StatusNoContent || !p.Halted() {
		t.Fatalf("/halt to 127.0.0.1: %d, halted %v; want 204, halted", code, p.Halted())
	}
}

func TestNewPublisherErrors(t *testing.T) {
	for _, s := range []Spec{{Ads: -1, Entries: 1}, {Entries: 0}, {Entries: 1, Fault: "lies"}} {
		if _, err := NewPublisher(s); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("NewPublisher(%+v): %v, want ErrInvalidSpec", s, err)
		}
	}
	if s1, s2 := PublisherSeed(1, 0), PublisherSeed(0, 1); s1 == s2 || PublisherSeed(1, 0) != s1 {
		t.Errorf("PublisherSeed: %d %d", s1, s2)
	}
	// The same spec gives the same identity and head.
	a := newPublisher(t, Spec{Seed: 9, Ads: 3, Entries: 2})
	b := newPublisher(t, Spec{Seed: 9, Ads: 1, Entries: 2})
	if err := b.Publish(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() || a.Head() != b.Head() {
		t.Fatalf("same spec, different publishers: %s %s, %s %s", a.ID(), a.Head(), b.ID(), b.Head())
	}
}
