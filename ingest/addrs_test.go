package ingest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store/memory"
)

// An Ingester started again on the same datastore (a restarted node)
// reaches a publisher announced without addresses at the addresses the
// previous one persisted, and walks the ads published meanwhile: a node
// can ask every publisher it follows for its head at start without
// knowing their addresses.
func TestAnnounceWithoutAddrsAfterRestart(t *testing.T) {
	ctx := context.Background()
	chain := generate(t, chaingen.Config{Seed: 21, Ads: 6, MhsPerAd: 10, ChunkSize: 4, RemoveEvery: 4, UpdateEvery: 3})
	st := memory.New()
	defer st.Close()
	ds := newDS()
	var mu sync.Mutex
	var asked [][]multiaddr.Multiaddr
	syncer := func(_ peer.ID, addrs []multiaddr.Multiaddr) (ingest.Syncer, error) {
		mu.Lock()
		asked = append(asked, addrs)
		mu.Unlock()
		if len(addrs) == 0 {
			return nil, errors.New("no address for the publisher")
		}
		return chain.Source(), nil
	}
	first, err := ingest.New(st, ds, syncer)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Sync(ctx, chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}

	// The publisher goes on while the node is down; the node restarts
	// and asks it for its head, without addresses.
	if err := chain.Extend(6); err != nil {
		t.Fatal(err)
	}
	again, err := ingest.New(st, ds, syncer)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- again.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	if err := again.Announce(chain.Publisher, nil, cid.Undef); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the walk to the new head", func() bool {
		s, ok := again.Status(chain.Publisher)
		return ok && s.LastHead.Equals(chain.Head())
	})
	equalModel(t, chain.Model(), st)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range asked {
		if !slices.EqualFunc(a, testAddrs, multiaddr.Multiaddr.Equal) {
			t.Errorf("a syncer was made for %v, want the persisted %v", a, testAddrs)
		}
	}
}
