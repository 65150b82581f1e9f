package handoff_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/handoff"
	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// countingSource serves a chain and records every block fetched.
type countingSource struct {
	src  *chaingen.Source
	mu   sync.Mutex
	got  map[cid.Cid]int
	head cid.Cid // served as the head when defined
}

func newCountingSource(c *chaingen.Chain) *countingSource {
	return &countingSource{src: c.Source(), got: make(map[cid.Cid]int)}
}

// Head is the chain's head, or the one set by setHead.
func (s *countingSource) Head(ctx context.Context) (cid.Cid, error) {
	s.mu.Lock()
	head := s.head
	s.mu.Unlock()
	if head.Defined() {
		return head, nil
	}
	return s.src.Head(ctx)
}

// setHead makes the source serve head as its head (cid.Undef: the chain's),
// as a publisher whose chain then ended there.
func (s *countingSource) setHead(head cid.Cid) {
	s.mu.Lock()
	s.head = head
	s.mu.Unlock()
}

func (s *countingSource) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	s.mu.Lock()
	s.got[c]++
	s.mu.Unlock()
	return s.src.Block(ctx, c)
}

func (s *countingSource) fetched() map[cid.Cid]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[cid.Cid]int, len(s.got))
	for k, v := range s.got {
		out[k] = v
	}
	return out
}

func (s *countingSource) syncer(peer.ID, []multiaddr.Multiaddr) (ingest.Syncer, error) { return s, nil }

// union shows two stores as one, as a gather over two indexers answers.
type union struct {
	store.Store
	b store.Store
}

func (u union) Get(ctx context.Context, mh multihash.Multihash) ([]store.Value, error) {
	va, err := u.Store.Get(ctx, mh)
	if err != nil {
		return nil, err
	}
	vb, err := u.b.Get(ctx, mh)
	if err != nil {
		return nil, err
	}
	for _, v := range vb {
		if !slices.ContainsFunc(va, v.Equal) {
			va = append(va, v)
		}
	}
	return va, nil
}

func (u union) All(ctx context.Context) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		seen := make(map[string]bool)
		for _, s := range []store.Store{u.Store, u.b} {
			for e, err := range s.All(ctx) {
				if err != nil {
					yield(store.Entry{}, err)
					return
				}
				if seen[string(e.Multihash)] {
					continue
				}
				seen[string(e.Multihash)] = true
				vals, err := u.Get(ctx, e.Multihash)
				if !yield(store.Entry{Multihash: e.Multihash, Values: vals}, err) || err != nil {
					return
				}
			}
		}
	}
}

// TestHandoffEndToEnd: node 1 ingests a chain up to ad k and freezes
// there; node 2 takes the publisher over through a real HTTP /providers
// and the real ingest package, and ingests only the ads after k. The two
// stores together hold the whole chain.
func TestHandoffEndToEnd(t *testing.T) {
	ctx := context.Background()
	const n, k = 12, 6
	chain, err := chaingen.Generate(chaingen.Config{Seed: 7, Ads: n, MhsPerAd: 20, ChunkSize: 7, ExtendedEvery: 4, PublisherSigns: true})
	if err != nil {
		t.Fatal(err)
	}
	pubAddrs := maddrs("/ip4/127.0.0.1/tcp/3104/http")

	// Node 1 ingests ads 0..k, then freezes: FrozenAt = LastAdvertisement.
	st1 := memory.New()
	defer st1.Close()
	src1 := newCountingSource(chain)
	ing1, err := ingest.New(st1, newMapDS(), src1.syncer)
	if err != nil {
		t.Fatal(err)
	}
	src1.setHead(chain.Ads[k])
	if err := ing1.Sync(ctx, chain.Publisher, pubAddrs, cid.Undef); err != nil {
		t.Fatal(err)
	}
	frozenTime := time.Now()
	var recs []store.ProviderInfo
	for info, err := range st1.Providers(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		info.FrozenAt, info.FrozenAtTime = info.LastAdvertisement, frozenTime
		if err := st1.PutProvider(ctx, info); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, info)
	}
	if len(recs) != 1 || !recs[0].FrozenAt.Equals(chain.Ads[k]) || recs[0].Publisher.ID != chain.Publisher {
		t.Fatalf("node 1 records %+v: want one provider frozen at ad %d", recs, k)
	}
	// A second provider of the publisher whose last ad is older, frozen
	// at the same time, listed first: its FrozenAt is the one the time
	// rule picks, yet ingestion must resume after ad k, the newest.
	second := store.ProviderInfo{
		AddrInfo:  peer.AddrInfo{ID: peerID(t, "second provider"), Addrs: maddrs("/ip4/127.0.0.1/tcp/9")},
		Publisher: recs[0].Publisher, LastAdvertisement: chain.Ads[k-3], LastAdvertisementTime: frozenTime,
		FrozenAt: chain.Ads[k-3], FrozenAtTime: frozenTime,
	}
	unrelated := store.ProviderInfo{AddrInfo: peer.AddrInfo{ID: peerID(t, "unrelated")}, Publisher: peer.AddrInfo{ID: peerID(t, "other publisher")}}
	list := []refProvider{refFromStore(unrelated), refFromStore(second), refFromStore(recs[0])}
	frozenNode := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/providers" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer frozenNode.Close()
	frozenID := peerID(t, "node 1")

	// Node 2 runs its ingester and receives the handoff.
	st2 := memory.New()
	defer st2.Close()
	src2 := newCountingSource(chain)
	walked := make(chan struct{}, 1)
	ing2, err := ingest.New(st2, newMapDS(), src2.syncer, ingest.WithHooks(ingest.Hooks{
		WalkDone: func(peer.ID, cid.Cid, int, time.Duration) {
			select {
			case walked <- struct{}{}:
			default:
			}
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error)
	go func() { ran <- ing2.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	regDir := t.TempDir()
	regDS := openLevelDB(t, regDir)
	r := newReceiver(t, st2, handoff.FromIngester(ing2), regDS)
	if err := r.Handoff(ctx, chain.Publisher, handoff.Request{FrozenID: frozenID, FrozenURL: frozenNode.URL}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-walked:
	case <-time.After(10 * time.Second):
		t.Fatal("node 2 did not walk the chain after the handoff")
	}

	// Node 2 fetched of ads 0..k only the two FrozenAt, once each, to
	// check them against the publisher before resetting its walk there;
	// node 1 nothing after k. Together every block, each by one node but
	// those two.
	got1, got2 := src1.fetched(), src2.fetched()
	checked := map[cid.Cid]bool{chain.Ads[k]: true, chain.Ads[k-3]: true}
	for i, ad := range chain.Ads[:k+1] {
		switch {
		case checked[ad] && got2[ad] != 1:
			t.Errorf("node 2 fetched FrozenAt ad %d %d times, want once (the check)", i, got2[ad])
		case !checked[ad] && got2[ad] > 0:
			t.Errorf("node 2 fetched ad %d", i)
		}
	}
	for c := range checked {
		delete(got2, c)
	}
	for c := range got2 {
		if got1[c] > 0 {
			t.Errorf("block %s fetched by both nodes", c)
		}
	}
	if len(got1)+len(got2) != chain.Blocks() {
		t.Errorf("nodes fetched %d + %d blocks, the chain has %d", len(got1), len(got2), chain.Blocks())
	}
	if s, _ := ing2.Status(chain.Publisher); s.AdsApplied != n-1-k || !s.LastHead.Equals(chain.Head()) {
		t.Errorf("node 2 status %+v: want %d ads applied up to the head", s, n-1-k)
	}

	if err := chain.ModelAt(k).Equal(ctx, st1); err != nil {
		t.Errorf("node 1: %v", err)
	}
	if err := chain.Model().Equal(ctx, union{st1, st2}); err != nil {
		t.Errorf("node 1 ∪ node 2: %v", err)
	}
	if err := chain.ModelAt(k).Equal(ctx, st2); err == nil {
		t.Error("node 2 holds the model at ad k: it ingested ads it should not have")
	}

	info, err := st2.Provider(ctx, chain.Provider)
	if err != nil {
		t.Fatal(err)
	}
	if info.Publisher.ID != chain.Publisher || !info.LastAdvertisement.Equals(chain.Head()) || info.FrozenAt.Defined() {
		t.Errorf("node 2's record of the provider: %+v", info)
	}
	if _, err := st2.Provider(ctx, second.AddrInfo.ID); err != nil {
		t.Errorf("second provider not registered: %v", err)
	}
	checkAssignments(t, r.Registry(), []handoff.Assignment{{Publisher: chain.Publisher, Continued: frozenID}})
}
