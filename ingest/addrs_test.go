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

// An announce without addresses does not discard the addresses an
// earlier announce brought that were not tried yet. The race it pins
// down, seen in examples/assigner's TestIndexerOfflineAtStart: a node
// starting up asks every publisher it follows for its head without
// addresses (its resync, before Run) while the first announce of a newly
// assigned publisher, with the publisher's addresses, arrives from a
// source. When the announce came first, the resync's announce dropped its
// addresses; the check then had nothing to try, failed "no address
// announced", counted against the announce's source, and left the
// publisher waiting for an announce that never came. The calls are made
// in that order, before Run, so the interleaving is forced.
func TestAnnounceWithoutAddrsKeepsAnnouncedAddrs(t *testing.T) {
	chain := generate(t, chaingen.Config{Seed: 22, Ads: 3, MhsPerAd: 4})
	st := memory.New()
	defer st.Close()
	srcs := newSources()
	srcs.set(chain.Publisher, chain.Source())
	ing := newIngester(t, st, newDS(), srcs)
	if err := ing.AnnounceFrom("127.0.0.0/24", chain.Publisher, testAddrs, chain.Head()); err != nil {
		t.Fatal(err)
	}
	if err := ing.Announce(chain.Publisher, nil, cid.Undef); err != nil {
		t.Fatal(err)
	}
	stop := runIngester(t, ing)
	defer stop()
	waitFor(t, "the check to verify or fail", func() bool {
		s, _ := ing.Status(chain.Publisher)
		return s.LastError != nil || s.LastHead.Equals(chain.Head())
	})
	s, _ := ing.Status(chain.Publisher)
	if s.LastError != nil || !s.Verified || !slices.EqualFunc(s.Addrs, testAddrs, multiaddr.Multiaddr.Equal) {
		t.Fatalf("status %+v: want verified at the announced %v, no error", s, testAddrs)
	}
	if u := ing.Unverified(); u.Failed != 0 || u.Held != 0 {
		t.Errorf("Unverified() = %+v, want no failed check, none held", u)
	}
	equalModel(t, chain.Model(), st)
}
