package localpool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/indexkit/indexkit/examples/localpool"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/internal/testbed/lane"
)

// TestE2EMaliciousPublishers: three faulty publishers beside two honest
// ones — ads with bad signatures, entry chunks that do not hash to their
// CIDs, and entry chunks over the 4 MiB block limit. Each is assigned to
// an indexer like any publisher (the fault shows only when its chain is
// walked); the owner's walk status names the error; no indexer and not
// the front end answers any multihash a faulty publisher advertises (the
// list regenerated from the same seed with publishernode's Go API); and
// the honest publishers' truth is answered in full.
func TestE2EMaliciousPublishers(t *testing.T) {
	lane.Integration(t, "starts a whole pool")
	const ads, badAds = 6, 2
	faults := []publishernode.Fault{publishernode.BadSignature, publishernode.CorruptBlocks, publishernode.HugeChunks}
	// What the owner's status of each must say (the ingest error's text).
	wantErr := map[publishernode.Fault]string{
		publishernode.BadSignature:  "signature",
		publishernode.CorruptBlocks: "hash mismatch",
		publishernode.HugeChunks:    "too large",
	}
	cfg := localpool.Config{
		Dir: t.TempDir(), Publishers: 2, Indexers: 2, Store: "memory",
		Interval: 100 * time.Millisecond, Entries: 5, MaxAds: ads, PollInterval: 200 * time.Millisecond,
		Malicious: faults, MaliciousMaxAds: badAds,
		Log: testLog{t}, LogLevel: 5, // errors only: the faulty walks warn
	}
	ctx, p := startFaultPool(t, cfg)
	s := waitFor(t, ctx, p, "every publisher assigned and at its last ad", func(s *localpool.Snapshot) bool {
		for _, ps := range s.Publishers {
			want := ads
			if ps.Fault != "" {
				want = badAds
			}
			if ps.Ads != want || len(ps.Owners) != 1 {
				return false
			}
		}
		return len(s.Publishers) == 2+len(faults)
	})
	c := waitComplete(t, ctx, p, "the honest publishers beside the faulty ones")
	if c.Multihashes == 0 {
		t.Fatal("empty truth")
	}
	t.Logf("honest truth through the front end: %v", c)

	urls := p.URLs()
	for i, f := range faults {
		ps := s.Publishers[2+i]
		if ps.Fault != string(f) || ps.Multihashes != 0 {
			t.Fatalf("%s: %+v, want fault %s and an empty truth", localpool.MaliciousName(i), ps, f)
		}
		// The owner's walk status names the error.
		var owner localpool.IndexerURLs
		for _, ix := range urls.Indexers {
			if ix.Name == ps.Owners[0] {
				owner = ix
			}
		}
		st := waitWalkError(t, ctx, owner.Admin, p.AdminToken(), ps.ID)
		if !strings.Contains(st.LastError, wantErr[f]) || st.EntriesIndexed != 0 {
			t.Errorf("%s on %s: status %+v, want an error naming %q and nothing indexed", f, owner.Name, st, wantErr[f])
		} else {
			t.Logf("%s on %s: %s", f, owner.Name, st.LastError)
		}

		// Nothing it advertises is answered, by any indexer or the front end.
		spec, err := p.PublisherSpec(localpool.MaliciousName(i), 0, badAds)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := publishernode.NewPublisher(spec)
		if err != nil {
			t.Fatal(err)
		}
		adv, err := pub.Advertised(true)
		if err != nil {
			t.Fatal(err)
		}
		if adv.Publisher != ps.ID || adv.Head != ps.Head || len(adv.Entries) == 0 {
			t.Fatalf("%s regenerated: publisher %s head %s, %d multihashes; want %s, %s and some",
				f, adv.Publisher, adv.Head, len(adv.Entries), ps.ID, ps.Head)
		}
		probe := nothing(adv.Entries, 60)
		if got := p.Check(ctx, probe); !got.OK() {
			t.Errorf("%s: the front end answers what it advertised: %v %q", f, got, got.Examples)
		}
		for _, ix := range urls.Indexers {
			if got := p.CheckIndexer(ctx, ix.Name, probe); !got.OK() {
				t.Errorf("%s: %s answers what it advertised: %v %q", f, ix.Name, got, got.Examples)
			}
		}
		t.Logf("%s: none of %d of its %d multihashes answered", f, len(probe), len(adv.Entries))
	}
}

// nothing returns at most n entries spread over es, each with no value:
// the answer that means "not indexed" to Pool.Check.
func nothing(es []publishernode.Entry, n int) []publishernode.Entry {
	step := max(1, len(es)/n)
	var out []publishernode.Entry
	for i := 0; i < len(es); i += step {
		out = append(out, publishernode.Entry{Multihash: es[i].Multihash})
	}
	return out
}

// waitWalkError waits until the indexer at adminURL reports a failed walk
// of publisher and returns its status.
func waitWalkError(t *testing.T, ctx context.Context, adminURL, token, publisher string) admin.PublisherStatus {
	t.Helper()
	c, err := admin.NewClient(adminURL, admin.WithClientToken(token))
	if err != nil {
		t.Fatal(err)
	}
	var last admin.PublisherStatus
	for {
		sts, err := c.IngestStatus(ctx)
		for _, st := range sts {
			if st.Publisher.String() == publisher {
				last = st
			}
		}
		if err == nil && last.LastError != "" {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no failed walk of %s on %s: last status %+v (%v)", publisher, adminURL, last, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
