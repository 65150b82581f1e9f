package localpool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/indexkit/indexkit/ingest/netpolicy"
	"github.com/indexkit/indexkit/ingest/schema"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/find"
)

// convergeAds is the chain length of each publisher in the convergence
// tests: enough for indexer-0 to freeze part-way.
const convergeAds = 60

// TestConvergeAcrossFreeze runs a pool whose indexer-0 freezes on its
// disk budget part-way through the publishers' chains (removals every 5th
// ad, metadata updates every 3rd), so that its publishers are handed off
// while their ads keep coming, some of them updating or removing contexts
// the frozen indexer holds. Once the publishers have stopped, the front
// end must answer every multihash of the ground truth with exactly its
// values (no value missing, stale, extra or duplicated), and the data must
// be split as the seed says: the frozen indexer holds (with the current
// metadata) what its publishers advertised up to its FrozenAt, the
// receivers what came after, and no indexer holds a publisher it was never
// assigned.
func TestConvergeAcrossFreeze(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 4, Indexers: 3, Store: "pebble",
		Interval: 200 * time.Millisecond, Entries: 5, MaxAds: convergeAds, RemoveEvery: 5, UpdateEvery: 3,
		// indexer-0 holds two publishers, whose ads grow its directory
		// by about 3.3 KiB a round of two ads: it reaches 90% of this
		// budget after about 15 of the 60 rounds.
		FreezeBudget: 120 << 10,
		PollInterval: 200 * time.Millisecond,
		Log:          testLog{t}, LogLevel: 4,
	}
	p := convStart(ctx, t, cfg)

	// indexer-0 freezes while the publishers are still publishing.
	s, err := p.WaitFor(ctx, "indexer-0 frozen", func(s *localpool.Snapshot) bool {
		ix := s.Indexer(localpool.IndexerName(0))
		return ix != nil && ix.Frozen
	})
	if err != nil {
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	if ads := s.Publishers[0].Ads; ads >= convergeAds {
		t.Fatalf("indexer-0 froze only after the publishers stopped (at %d ads): the freeze budget is too large", ads)
	}
	t.Logf("indexer-0 frozen at about ad %d of %d", s.Publishers[0].Ads, convergeAds)

	// The publishers stop; every handoff completes.
	s = convSettled(ctx, t, p, convergeAds)
	frozen := map[string]string{} // publisher → the indexer it was handed off to
	for _, h := range s.Handoffs {
		if h.From == localpool.IndexerName(0) {
			frozen[h.Publisher] = h.To
		}
	}
	if len(frozen) == 0 {
		t.Fatalf("no handoff from indexer-0: %+v", s.Handoffs)
	}

	c, err := convWaitComplete(ctx, p)
	truth, terr := p.Truth(ctx)
	if terr != nil {
		t.Fatal(terr)
	}
	if err != nil {
		convExplain(ctx, t, p, truth)
		t.Fatal(err)
	}
	t.Logf("front end: %v", c)

	// The split: per publisher, who holds which multihash.
	convCheckSplit(ctx, t, p, s, truth, frozen)
}

// convWaitComplete is p.WaitComplete within 40 s, leaving the rest of
// ctx to explain a failure.
func convWaitComplete(ctx context.Context, p *localpool.Pool) (localpool.Check, error) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	return p.WaitComplete(ctx)
}

// convStart starts cfg and closes the pool at the end of the test.
func convStart(ctx context.Context, t *testing.T, cfg localpool.Config) *localpool.Pool {
	t.Helper()
	p, err := localpool.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

// convSettled waits until every honest publisher has its ads ads, every
// handoff is done, and every publisher's active owners have walked to its
// head.
func convSettled(ctx context.Context, t *testing.T, p *localpool.Pool, ads int) *localpool.Snapshot {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := p.WaitFor(wctx, fmt.Sprintf("publishers at %d ads, handoffs done, owners at the heads", ads), func(s *localpool.Snapshot) bool {
		if len(s.Pending()) > 0 {
			return false
		}
		for _, ps := range s.Publishers {
			if ps.Fault != "" {
				continue
			}
			if ps.Ads != ads || len(ps.Owners) == 0 || ps.Lag != 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		if s, serr := p.Snapshot(ctx); serr == nil {
			for _, ps := range s.Publishers {
				t.Logf("%+v", ps)
			}
			t.Logf("handoffs %+v", s.Handoffs)
		}
		convDumpLogs(t, p)
		t.Fatal(err)
	}
	return s
}

// convDumpLogs logs every role's last log lines.
func convDumpLogs(t *testing.T, p *localpool.Pool) {
	t.Helper()
	for _, r := range p.Roles() {
		t.Logf("%s:\n%s", r, lines(p.LogLines(r)))
	}
}

// convExplain logs, for a few incomplete multihashes, what each indexer
// answers.
func convExplain(ctx context.Context, t *testing.T, p *localpool.Pool, truth localpool.Truth) {
	t.Helper()
	c := p.Check(ctx, truth.Queries())
	t.Logf("front end: %v; examples: %s", c, strings.Join(c.Examples, "; "))
	for _, ix := range p.Indexers() {
		t.Logf("%s: %v", ix, p.CheckIndexer(ctx, ix, truth.Queries()))
	}
	n := 0
	for _, e := range truth.Entries {
		if pr := p.Probe(ctx, e); !pr.Complete && n < 5 {
			n++
			t.Logf("probe %+v", pr)
		}
	}
}

// convCheckSplit checks where each publisher's multihashes live: a publisher
// handed off from the frozen indexer-0 has its contexts advertised up to
// indexer-0's FrozenAt there, with their current metadata, and the later
// ones on its receiver; every other publisher is held whole by its owner;
// no indexer answers for a publisher it never held; and no indexer, the
// frozen one included, answers a removed multihash.
func convCheckSplit(ctx context.Context, t *testing.T, p *localpool.Pool, s *localpool.Snapshot, truth localpool.Truth, handedOff map[string]string) {
	t.Helper()
	checkGone(ctx, t, p, truth)
	frozenAt := convFrozenPoints(ctx, t, p)
	byPub := map[string][]publishernode.Entry{}
	for _, e := range truth.Entries {
		byPub[e.Values[0].ProviderID] = append(byPub[e.Values[0].ProviderID], e)
	}
	urls := p.URLs()
	for i, ps := range s.Publishers {
		entries := byPub[ps.ID]
		holders := slices.Concat(ps.Owners, ps.Frozen)
		to, ok := handedOff[ps.ID]
		if !ok {
			if len(holders) != 1 {
				t.Errorf("%s: held by %v, want one indexer (replication 1, no handoff)", ps.Name, holders)
				continue
			}
			if c := p.CheckIndexer(ctx, holders[0], entries); !c.OK() {
				t.Errorf("%s: its owner %s answers %v", ps.Name, holders[0], c)
			}
		} else {
			at, ok := frozenAt[ps.ID]
			if !ok {
				t.Errorf("%s: handed off, but indexer-0 lists no FrozenAt for it", ps.Name)
				continue
			}
			pre, post, k := convSplitAt(ctx, t, urls.Publishers[i], ps.ID, at, entries)
			t.Logf("%s: FrozenAt is ad %d; %d multihashes before, %d after, handed off to %s", ps.Name, k, len(pre), len(post), to)
			if len(pre) == 0 || len(post) == 0 {
				t.Errorf("%s: %d multihashes before the freeze, %d after: want both", ps.Name, len(pre), len(post))
			}
			if c := p.CheckIndexer(ctx, localpool.IndexerName(0), pre); !c.OK() {
				t.Errorf("%s: frozen indexer-0 on the multihashes advertised up to its FrozenAt: %v %v", ps.Name, c, c.Examples)
			}
			if c := p.CheckIndexer(ctx, to, post); !c.OK() {
				t.Errorf("%s: receiver %s on the multihashes advertised after the FrozenAt: %v %v", ps.Name, to, c, c.Examples)
			}
			holders = []string{localpool.IndexerName(0), to}
		}
		for _, ix := range p.Indexers() {
			if slices.Contains(holders, ix) {
				continue
			}
			if c := p.CheckIndexer(ctx, ix, entries); c.Missing != c.Multihashes || c.Extra != 0 {
				t.Errorf("%s: %s never held it but answers for it: %v", ps.Name, ix, c)
			}
		}
	}
}

// convFrozenPoints reads indexer-0's provider records: each provider's
// FrozenAt.
func convFrozenPoints(ctx context.Context, t *testing.T, p *localpool.Pool) map[string]cid.Cid {
	t.Helper()
	var infos []find.ProviderInfo
	if err := convGetJSON(ctx, p.URLs().Indexers[0].Find+"/providers", &infos); err != nil {
		t.Fatal(err)
	}
	out := map[string]cid.Cid{}
	for _, info := range infos {
		if info.FrozenAt.Defined() {
			out[info.AddrInfo.ID.String()] = info.FrozenAt
		}
	}
	return out
}

// convSplitAt walks the publisher's chain (over ipnisync) and splits entries
// into those whose context was advertised at or before the ad at, and
// those advertised after it; k is at's position (1 = genesis).
func convSplitAt(ctx context.Context, t *testing.T, base, id string, at cid.Cid, entries []publishernode.Entry) (pre, post []publishernode.Entry, k int) {
	t.Helper()
	pid, err := peer.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := netpolicy.New(netpolicy.AllowPrivate()) // the pool's publishers are on 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ipnisync.NewURL(base, pid, ipnisync.WithDialPolicy(pool))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c, err := cl.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var chain []*schema.Advertisement // newest first
	pos := -1
	for c.Defined() {
		b, err := cl.Block(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ad, err := schema.DecodeAdvertisement(c, b)
		if err != nil {
			t.Fatal(err)
		}
		if c.Equals(at) {
			pos = len(chain)
		}
		chain = append(chain, ad)
		c = ad.PreviousID
	}
	if pos < 0 {
		t.Fatalf("FrozenAt %s is not in the chain of %s", at, id)
	}
	k = len(chain) - pos
	firstPut := map[string]int{} // context → position of its ad with entries (1 = genesis)
	for i, ad := range chain {
		if !ad.IsRm && !ad.Entries.Equals(schema.NoEntries) {
			firstPut[string(ad.ContextID)] = len(chain) - i
		}
	}
	for _, e := range entries {
		if firstPut[string(e.Values[0].ContextID)] <= k {
			pre = append(pre, e)
		} else {
			post = append(post, e)
		}
	}
	return pre, post, k
}

// convGetJSON decodes the JSON answer of GET url into v.
func convGetJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
