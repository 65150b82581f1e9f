package indexernode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/examples/publishernode"
	"github.com/indexkit/indexkit/freeze"
	"github.com/indexkit/indexkit/ingest/announce"
)

// A Pebble node given a disk budget sizes its memtables, and so its
// preallocated write-ahead logs, to the budget: the bytes allocated under
// its directory stay under a 4 MiB budget when it has just opened and
// after it has ingested a small chain in two walks. With no budget, and
// Pebble's default 64 MiB memtable, the second walk's log write
// preallocates some 70 MiB (logged for comparison).
func TestPebbleSizedToBudget(t *testing.T) {
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
				if tc.budget > 0 && used > uint64(tc.budget) {
					t.Errorf("%s: %d bytes allocated, over the budget of %d", when, used, tc.budget)
				}
				return used
			}

			// -freeze-at -1: the node must not freeze while it is measured.
			find, stop := startIndexer(ctx, t, dir, "-disk-budget", fmt.Sprint(tc.budget), "-freeze-at", "-1")
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
