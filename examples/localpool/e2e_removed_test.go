package localpool_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/find"
	"github.com/indexkit/indexkit/store"
	"github.com/indexkit/indexkit/store/memory"
)

// removedAds is the chain length of each publisher in TestE2ERemoved.
const removedAds = 16

// TestE2ERemoved: the publishers remove a context every 4th ad and update
// one every 3rd. Once they have stopped, the front end answers every live
// multihash in full and none of the removed ones (WaitComplete asks for
// both), and no indexer answers a removed multihash on its own find API.
// Then, to show the check can fail, it checks a find API over a store
// that holds the same live values and the removed multihashes with the
// values they had before their removal (an indexer that ignored the
// removals): every live multihash is complete, every removed one counts
// as stale (Extra), and the check is not OK.
func TestE2ERemoved(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := localpool.Start(ctx, localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2,
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: removedAds, RemoveEvery: 4, UpdateEvery: 3,
		PollInterval: 200 * time.Millisecond, Log: testLog{t}, LogLevel: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.WaitFor(ctx, "every publisher at its last ad", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			if ps.Ads != removedAds {
				return false
			}
		}
		return len(s.Publishers) == 2
	}); err != nil {
		t.Fatal(err)
	}
	c, err := p.WaitComplete(ctx)
	if err != nil {
		t.Fatalf("%v; examples: %q", err, c.Examples)
	}
	tr, err := p.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Removed) == 0 || c.Removed != len(tr.Removed) || c.Multihashes != len(tr.Entries)+len(tr.Removed) {
		t.Fatalf("check %v of a truth of %d live and %d removed multihashes: want both asked, some removed", c, len(tr.Entries), len(tr.Removed))
	}
	t.Logf("front end: %v", c)
	checkGone(ctx, t, p, tr)

	// An answer source that ignores removals: the live values, and each
	// removed multihash with the values it had at its last ad alive
	// (the truths of the regenerated chains, ad by ad).
	st := memory.New()
	defer st.Close()
	put := func(e publishernode.Entry) {
		mh, err := multihash.FromB58String(e.Multihash)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range e.Values {
			id, err := peer.Decode(v.ProviderID)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, store.Value{ProviderID: id, ContextID: v.ContextID, Metadata: v.Metadata}, mh); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range tr.Entries {
		put(e)
	}
	removed := map[string]bool{}
	for _, mh := range tr.Removed {
		removed[mh] = true
	}
	last := map[string]publishernode.Entry{} // removed multihash -> its values at its last ad alive
	for i := range 2 {
		for ads := 1; ads <= removedAds; ads++ {
			spec, err := p.PublisherSpec(localpool.RolePublishers, i, ads)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := publishernode.NewPublisher(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range pub.Truth(true).Entries {
				if removed[e.Multihash] {
					last[e.Multihash] = e
				}
			}
		}
	}
	if len(last) != len(tr.Removed) {
		t.Fatalf("the regenerated chains held %d of the %d removed multihashes", len(last), len(tr.Removed))
	}
	stale := 0
	for _, e := range last {
		put(e)
		stale += len(e.Values)
	}
	b, err := find.NewStoreBackend(st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := find.NewHandler(b)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	if ok := p.CheckAt(ctx, srv.URL, tr.Entries); !ok.OK() {
		t.Fatalf("the stale source on the live multihashes: %v %q", ok, ok.Examples)
	}
	bad := p.CheckAt(ctx, srv.URL, tr.Queries())
	if bad.OK() || bad.Extra != stale || bad.Removed != len(tr.Removed) || bad.Complete != len(tr.Entries) || bad.Missing != 0 {
		t.Fatalf("the stale source: %v; want %d complete, %d extra (the removed values), not OK", bad, len(tr.Entries), stale)
	}
	if len(bad.Examples) == 0 || !strings.Contains(bad.Examples[0], "removed") || !strings.Contains(bad.String(), "removed") {
		t.Fatalf("the stale source: %v, examples %q: want the removed ones named", bad, bad.Examples)
	}
	t.Logf("a source that ignores removals: %v; e.g. %s", bad, bad.Examples[0])
}

// checkGone checks that no indexer answers any removed multihash of the
// truth on its own find API (what a front end merges could hide it).
func checkGone(ctx context.Context, t *testing.T, p *localpool.Pool, truth localpool.Truth) {
	t.Helper()
	gone := truth.Queries()[len(truth.Entries):]
	for _, ix := range p.Indexers() {
		if c := p.CheckIndexer(ctx, ix, gone); !c.OK() || c.Removed != len(gone) {
			t.Errorf("%s on the %d removed multihashes: %v %q", ix, len(gone), c, c.Examples)
		}
	}
	t.Logf("no indexer answers any of the %d removed multihashes", len(gone))
}
