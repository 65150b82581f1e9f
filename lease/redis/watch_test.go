package redis_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// The change feed's conformance against a real redis-server, on real time
// with 20ms units.
func TestWatch(t *testing.T) {
	redistest.Client(t, redistest.Addr())
	leasetest.RunWatch(t, newStore, 20*time.Millisecond)
}

// A reader whose position was trimmed away, or whose stream is gone (as
// after a restart without data), gets a Reset before the changes that
// follow.
func TestWatchResetsAfterTrimAndLoss(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	prefix := redistest.Prefix(t, c, "lease")
	s, err := leaseredis.New(c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next, stop := iter.Pull2(s.Watch(ctx))
	defer stop()
	want := func(what string, reset bool, commit string) {
		t.Helper()
		ch, err, ok := next()
		if !ok || err != nil || ch.Reset != reset || (!reset && ch.Row.Commit != commit) {
			t.Fatalf("%s: %+v, err %v, ok %v; want reset %v commit %q", what, ch, err, ok, reset, commit)
		}
	}
	want("start", true, "")
	put := func(commit string) {
		t.Helper()
		if err := s.Put(ctx, lease.Item{ID: "a", Commit: commit}); err != nil {
			t.Fatal(err)
		}
	}
	put("1")
	want("a put", false, "1")
	put("2")
	put("3")
	// Trim away "2" (and "3") before the reader gets to it.
	if err := c.XTrimMaxLen(ctx, prefix+"changes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	put("4")
	want("after a trim", true, "")
	want("after a trim", false, "4")
	// Lose the stream and its counter, as a restart without data does.
	if err := c.Del(ctx, prefix+"changes", prefix+"changes:seq").Err(); err != nil {
		t.Fatal(err)
	}
	put("5")
	want("after a loss", true, "")
	// The reader sees "5" if the new stream's IDs are above its position
	// (a gap in the sequence numbers), else it finds the stream behind
	// it at the end of a block and lists instead: either way, "6" comes.
	put("6")
	ch, err, ok := next()
	if ok && err == nil && ch.Row.Commit == "5" {
		ch, err, ok = next()
	}
	if !ok || err != nil || ch.Reset || ch.Row.Commit != "6" {
		t.Fatalf("after a loss: %+v, err %v, ok %v; want commit 6", ch, err, ok)
	}
}
