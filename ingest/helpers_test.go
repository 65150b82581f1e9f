package ingest_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
	"github.com/indexkit/indexkit/store/pebble"
)

func generate(t testing.TB, cfg chaingen.Config) *chaingen.Chain {
	t.Helper()
	c, err := chaingen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newDS() datastore.Batching { return dssync.MutexWrap(datastore.NewMapDatastore()) }

// backends are the stores every ingest test runs against.
var backends = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"memory", func(t testing.TB) store.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"pebble", func(t testing.TB) store.Store {
		s, err := pebble.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
}

// sources is a SyncerFunc serving a fixed Syncer per publisher.
type sources struct {
	mu sync.Mutex
	m  map[peer.ID]ingest.Syncer
}

func newSources() *sources { return &sources{m: make(map[peer.ID]ingest.Syncer)} }

func (s *sources) set(p peer.ID, src ingest.Syncer) {
	s.mu.Lock()
	s.m[p] = src
	s.mu.Unlock()
}

func (s *sources) syncer(p peer.ID, _ []multiaddr.Multiaddr) (ingest.Syncer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src := s.m[p]; src != nil {
		return src, nil
	}
	return nil, errors.New("no source for publisher")
}

var testAddrs = []multiaddr.Multiaddr{multiaddr.StringCast("/ip4/127.0.0.1/tcp/3104/http")}

func newIngester(t testing.TB, st store.Store, ds datastore.Batching, srcs *sources, opts ...ingest.Option) *ingest.Ingester {
	t.Helper()
	ing, err := ingest.New(st, ds, srcs.syncer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ing
}

// providerView shows only the values of one provider, so that the model
// of one chain can be compared with a store several chains share.
type providerView struct {
	store.Store
	provider peer.ID
}

func (v providerView) filter(vals []store.Value) []store.Value {
	var out []store.Value
	for _, x := range vals {
		if x.ProviderID == v.provider {
			out = append(out, x)
		}
	}
	return out
}

func (v providerView) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
	vals, err := v.Store.Get(ctx, mh)
	return v.filter(vals), err
}

func (v providerView) All(ctx context.Context) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		for e, err := range v.Store.All(ctx) {
			if err == nil {
				e.Values = v.filter(e.Values)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// overlay serves a chain with extra blocks on top and, if head is set, a
// different head.
type overlay struct {
	base   ingest.Syncer
	head   cid.Cid
	blocks map[cid.Cid][]byte
	// hang makes Block of this CID wait for ctx to end.
	hang cid.Cid
}

func (o *overlay) Head(ctx context.Context) (cid.Cid, error) {
	if o.head.Defined() {
		return o.head, nil
	}
	return o.base.Head(ctx)
}

func (o *overlay) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	if c.Equals(o.hang) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if b, ok := o.blocks[c]; ok {
		return b, nil
	}
	return o.base.Block(ctx, c)
}

// topAd builds an ad of chain's provider on top of chain's head, changed
// by edit and signed by key (unsigned when key is nil), and returns a
// source serving the chain with it as the head.
func topAd(t testing.TB, chain *chaingen.Chain, key crypto.PrivKey, edit func(ad *schema.Advertisement, o *overlay)) *overlay {
	t.Helper()
	o := &overlay{base: chain.Source(), blocks: make(map[cid.Cid][]byte)}
	ad := &schema.Advertisement{
		PreviousID: chain.Head(),
		Provider:   chain.Provider.String(),
		Addresses:  chain.Addrs,
		Entries:    schema.NoEntries,
		ContextID:  []byte("top-ad"),
		Metadata:   []byte{0x80, 0x12, 0x00},
	}
	edit(ad, o)
	if key != nil {
		if err := ad.Sign(key); err != nil {
			t.Fatal(err)
		}
	}
	block, c, err := ad.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o.blocks[c], o.head = block, c
	return o
}

// chunkBlock encodes a chunk of mhs linking next and adds it to o.
func chunkBlock(t testing.TB, o *overlay, mhs []multihash.Multihash, next cid.Cid) cid.Cid {
	t.Helper()
	ch := &schema.EntryChunk{Entries: mhs, Next: next}
	block, c, err := ch.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o.blocks[c] = block
	return c
}

// counting wraps a Syncer, calling at (if set) before the n-th Block call.
type counting struct {
	ingest.Syncer
	n  atomic.Int64
	at func(n int64)
}

func (c *counting) Block(ctx context.Context, id cid.Cid) ([]byte, error) {
	n := c.n.Add(1)
	if c.at != nil {
		c.at(n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.Syncer.Block(ctx, id)
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func equalModel(t testing.TB, m *chaingen.Model, st store.Store) {
	t.Helper()
	if err := m.Equal(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

// runIngester runs ing until the returned function is called, which waits
// for Run to return and reports its error.
func runIngester(t testing.TB, ing *ingest.Ingester) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ing.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// runToHeads runs ing, announces every chain's publisher (the ingester
// asks each for its head), waits until each is walked to its chain's
// head, stops ing and checks that Run returned no error.
func runToHeads(t testing.TB, ing *ingest.Ingester, chains []*chaingen.Chain) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- ing.Run(ctx) }()
	for _, c := range chains {
		if err := ing.Announce(c.Publisher, testAddrs, cid.Undef); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every publisher", func() bool {
		for _, c := range chains {
			s, _ := ing.Status(c.Publisher)
			if !s.LastHead.Equals(c.Head()) {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
