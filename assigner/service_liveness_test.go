package assigner_test

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/assigner"
)

// heldBy reports whether one of fakes holds p.
func heldBy(p peer.ID, fakes ...*fakeIndexer) bool {
	for _, f := range fakes {
		if _, ok := f.node.holds(p); ok {
			return true
		}
	}
	return false
}

// startedDown runs a service with replication 1 over a (up) and b (down
// at start: every admin request answered 503) with an hour between
// periodic polls, and waits for the startup poll of both.
func startedDown(t *testing.T, opts ...assigner.ServiceOption) (r *running, a, b *fakeIndexer) {
	t.Helper()
	a, b = newFakeIndexer(t, "a"), newFakeIndexer(t, "b")
	b.node.down = true
	r = runService(t, assigner.ServiceConfig{Replication: 1, PollInterval: time.Hour}, []*fakeIndexer{a, b}, opts...)
	waitFor(t, "the startup polls", func() bool {
		for _, ix := range r.snapshot(t).Indexers {
			if ix.ID == "a" && !ix.Known || ix.ID == "b" && ix.Online {
				return false
			}
		}
		return b.node.pollCount() > 0
	})
	return r, a, b
}

// With replication 1, an indexer never polled blocks every assignment
// (it may hold the publisher). When it comes up after the startup, the
// next announce polls it and the publisher is assigned at once, not at
// the next periodic poll (an hour here).
func TestServiceAnnouncePollsUnknownIndexer(t *testing.T) {
	r, a, b := startedDown(t)
	p := newPublisher(t)
	if err := r.announce(t, p, randCid(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p to wait for b's assignments", func() bool {
		for _, ps := range r.snapshot(t).Publishers {
			if ps.Publisher == p && ps.Waiting == assigner.ReasonUnknown {
				return true
			}
		}
		return false
	})
	if heldBy(p, a, b) {
		t.Fatal("p assigned while b was never polled (it may hold p)")
	}

	b.node.set(func(n *fakeNode) { n.down = false })
	if err := r.announce(t, p, randCid(t)); err != nil {
		t.Fatal(err)
	}
	// Bounded by waitTimeout, far below the hour between polls.
	waitFor(t, "p assigned after b came up", func() bool { return heldBy(p, a, b) })
	if n := b.node.pollCount(); n > 4 {
		t.Errorf("b polled %d times for two announces, want at most 4", n)
	}
}

// A flood of announces while an indexer is down polls it, but at most
// once per announce poll interval (plus the startup poll and the one in
// progress), not once per announce.
func TestServiceAnnounceFloodPollsBounded(t *testing.T) {
	const (
		n        = 200
		interval = 200 * time.Millisecond
	)
	r, a, b := startedDown(t, assigner.WithAnnouncePollInterval(interval))
	start, before := time.Now(), b.node.pollCount()
	p := newPublisher(t)
	for range n {
		if err := r.announce(t, p, randCid(t)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a poll of b triggered by the announces", func() bool { return b.node.pollCount() > before })
	time.Sleep(2 * interval) // the last announce's poll, deferred to the end of its interval
	polls := b.node.pollCount() - before
	if limit := 2 + int(time.Since(start)/interval); polls > limit {
		t.Errorf("%d announces in %s polled b %d times, want at most %d (one per %s)",
			n, time.Since(start).Round(time.Millisecond), polls, limit, interval)
	}
	t.Logf("%d announces in %s: b polled %d times", n, time.Since(start).Round(time.Millisecond), polls)
	if heldBy(p, a, b) {
		t.Fatal("p assigned while b was never polled (it may hold p)")
	}

	b.node.set(func(n *fakeNode) { n.down = false })
	if err := r.announce(t, p, randCid(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p assigned after b came up", func() bool { return heldBy(p, a, b) })
}
