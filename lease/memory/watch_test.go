package memory_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	"github.com/indexkit/indexkit/lease/memory"
)

// The change feed's conformance, on real time with 10ms units.
func TestWatch(t *testing.T) { leasetest.RunWatch(t, newStore, 10*time.Millisecond) }

// A consumer that does not read while more than WatchBuffer changes are
// made gets a Reset before the changes that follow, and the writes never
// wait for it.
func TestWatchOverflowResets(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next, stop := iter.Pull2(s.Watch(ctx))
	defer stop()
	if c, err, ok := next(); !ok || err != nil || !c.Reset {
		t.Fatalf("first change %+v %v %v, want a Reset", c, err, ok)
	}
	for i := range memory.WatchBuffer + 10 {
		if err := s.Put(ctx, lease.Item{ID: "a", MinBid: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err, ok := next()
	if !ok || err != nil || !c.Reset {
		t.Fatalf("after an overflow: %+v %v %v, want a Reset", c, err, ok)
	}
	c, _, _ = next()
	if c.Reset || c.Row.Version <= memory.WatchBuffer {
		t.Fatalf("after the Reset: %+v, want a change made after the overflow", c)
	}
}
