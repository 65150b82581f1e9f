package indexernode_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/indexernode"
	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/scatter/find"
)

// A small Pebble node takes a small disk: the bytes allocated under its
// directory stay under 4 MiB when it has just opened and after it has
// ingested a small chain in two walks, given a 4 MiB budget (memtables
// sized to it) and given none (Pebble's default 64 MiB memtables: the
// store grows its logs' preallocation with what they hold, where Pebble
// preallocated some 70 MiB at the second walk's log write, and the
// demo's indexers showed 140 to 352 MiB).
func TestPebbleSizedToBudget(t *testing.T) {
	const small = 4 << 20
	for _, tc := range []struct {
		name   string
		budget int64 // 0: no budget, Pebble's default memtable
	}{{"default", 0}, {"budget 4MiB", 4 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pub, addr := servePublisher(t, publishernode.Spec{Seed: 12, Ads: 20, Entries: 10, ChunkSize: 4, RemoveEvery: 3, UpdateEvery: 2})
			dir := t.TempDir()
			allocated := func(when string) uint64 {
				t.Helper()
				used, _, err := freeze.Budget(dir, 0).Usage(dir)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d bytes allocated under the node's dir", when, used)
				if used > small {
					t.Errorf("%s: %d bytes allocated, over %d", when, used, small)
				}
				return used
			}

			// -freeze-at -1: the node must not freeze while it is measured.
			find, stop := startIndexer(ctx, t, dir, func(c *indexernode.Config) { c.DiskBudget, c.FreezeAt = tc.budget, -1 })
			defer stop()
			allocated("opened")
			s, err := announce.NewHTTPSender([]string{find.ingest}, pub.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Two walks, so that the log is written more than once: Pebble
			// preallocates it on a write past its start.
			for i := range 2 {
				if i > 0 {
					if err := pub.Publish(ctx, 10); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
					t.Fatal(err)
				}
				waitTruth(ctx, t, find.find, pub)
				allocated(fmt.Sprintf("ingested %d ads", pub.Truth(false).Ads))
			}
		})
	}
}

// A frozen node keeps walking its publishers (removals, metadata updates
// and provider records still apply) but its disk must not grow with the
// advertisements it walks: with a 1 MiB budget, frozen by its admin API
// after a first walk, it walks 5,000 more advertisements in ten walks,
// and the bytes allocated under its directory stay under the budget after
// each. Per-advertisement markers (some 230 bytes of walk state for each
// advertisement walked while frozen) took it past the budget.
func TestFrozenNodeStaysInBudget(t *testing.T) {
	const (
		budget = 1 << 20
		perRun = 500
	)
	rounds := 10
	if !lane.Full(t, "10 rounds of 500 ads, 3 under -short") {
		rounds = 3
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub, addr := servePublisher(t, publishernode.Spec{Seed: 14, Ads: 10, Entries: 4, ChunkSize: 4, RemoveEvery: 5, UpdateEvery: 3})
	dir := t.TempDir()
	urls, stop := startIndexer(ctx, t, dir, func(c *indexernode.Config) { c.DiskBudget = budget })
	defer stop()
	s, err := announce.NewHTTPSender([]string{urls.ingest}, pub.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	send := func() {
		t.Helper()
		if err := s.Send(ctx, announce.Message{Cid: pub.Head(), Addrs: []multiaddr.Multiaddr{addr}}); err != nil {
			t.Fatal(err)
		}
	}
	send()
	waitTruth(ctx, t, urls.find, pub)

	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, urls.admin+"/freeze", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /freeze: %s", resp.Status)
	}

	fc, err := find.NewClient(urls.find)
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	for round := range rounds {
		if err := pub.Publish(ctx, perRun); err != nil {
			t.Fatal(err)
		}
		send()
		// A frozen node still records the provider's last advertisement.
		for {
			info, err := fc.Provider(ctx, pub.ID())
			if err == nil && info.LastAdvertisement.Equals(pub.Head()) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("round %d: the frozen node never walked to the head %s: %+v, %v", round, pub.Head(), info, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		used, _, err := freeze.Budget(dir, 0).Usage(dir)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, used)
		t.Logf("walked %d ads frozen: %d bytes allocated (%.0f%% of the budget)", (round+1)*perRun, used, 100*float64(used)/budget)
	}
	if peak > budget {
		t.Errorf("a frozen node's disk grew to %d bytes allocated, over its budget of %d", peak, budget)
	}
}
