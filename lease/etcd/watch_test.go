package etcd_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/etcdtest"
	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
)

// next reads the next change from ch within 10 s.
func next(t *testing.T, ch <-chan change) change {
	t.Helper()
	select {
	case c := <-ch:
		if c.err != nil {
			t.Fatalf("watch: %v", c.err)
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10 s")
	}
	return change{}
}

// pull calls next (of iter.Pull2) and waits at most 10 s for it; past
// that it closes s, which ends the feed, so that next returns before the
// test fails (next and stop must not run at once).
func pull(t *testing.T, s *leaseetcd.Store, next func() (lease.Change, error, bool)) (lease.Change, error, bool) {
	t.Helper()
	type res struct {
		c   lease.Change
		err error
		ok  bool
	}
	ch := make(chan res, 1)
	go func() {
		c, err, ok := next()
		ch <- res{c, err, ok}
	}()
	select {
	case r := <-ch:
		return r.c, r.err, r.ok
	case <-time.After(10 * time.Second):
		_ = s.Close()
		<-ch
		t.Fatal("no change within 10 s")
	}
	return lease.Change{}, nil, false
}

type change struct {
	lease.Change
	err error
}

func watch(ctx context.Context, s *leaseetcd.Store) <-chan change {
	ch := make(chan change, 64)
	go func() {
		defer close(ch)
		for c, err := range s.Watch(ctx) {
			select {
			case ch <- change{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// The feed starts with a Reset, then yields each write of a row in
// order, a grant with its fence and owner, a release as the idle row;
// after a compaction past the feed's revision it yields a Reset again.
func TestWatch(t *testing.T) {
	cli := client(t)
	s, err := leaseetcd.New(cli, etcdtest.Prefix(t, cli, "watch"), lease.WithMaxBids(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := watch(ctx, s)
	if c := next(t, ch); !c.Reset {
		t.Fatalf("first change %+v, want a Reset", c)
	}
	if err := s.Put(ctx, lease.Item{ID: "a", Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.Reset || c.Row.ID != "a" || c.Row.Commit != "c1" || c.Row.Version != 1 {
		t.Fatalf("after Put: %+v", c)
	}
	res, err := s.Bid(ctx, "a", "n1", 10)
	if err != nil || res.Result == nil || res.Result.Grant == nil {
		t.Fatalf("Bid: %+v %v", res, err)
	}
	ref := res.Result.Grant.Ref
	if c := next(t, ch); c.Row.Owner != "n1" || c.Row.Fence != ref.Fence || c.Row.State != lease.Leased {
		t.Fatalf("after the grant: %+v", c)
	}
	if err := s.Release(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.Row.Owner != "" || c.Row.Fence != ref.Fence || c.Row.State != lease.Idle {
		t.Fatalf("after Release: %+v", c)
	}
	// A consumer that stops reading right after the Reset, while the
	// history the feed would resume from is compacted away: the feed must
	// say so with a second Reset, not skip the writes silently.
	next2, stop := iter.Pull2(s.Watch(ctx))
	defer stop()
	if c, err, ok := pull(t, s, next2); !ok || err != nil || !c.Reset {
		t.Fatalf("first change %+v %v, want a Reset", c, err)
	}
	for i := range 3 {
		if err := s.Put(ctx, lease.Item{ID: "b", Size: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	c, err, ok := pull(t, s, next2)
	if !ok || err != nil || !c.Reset {
		t.Fatalf("after a compaction past the feed: %+v %v, want a Reset", c, err)
	}
	if err := s.Put(ctx, lease.Item{ID: "b", Size: 9}); err != nil {
		t.Fatal(err)
	}
	if c, err, _ := pull(t, s, next2); err != nil || c.Row.ID != "b" || c.Row.Size != 9 {
		t.Fatalf("after the Reset: %+v %v", c, err)
	}
	// Close ends the feed with ErrClosed.
	_ = s.Close()
	if _, err, _ := pull(t, s, next2); !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// The feed builds rows from its own events and from what it read at its
// start: a grant made before the feed started is still shown with its
// owner when a later write changes only the row, and a grant whose etcd
// lease lapses is shown idle when the owner key goes, with the same
// fence, without a renewal or a read in between.
func TestWatchStartStateAndLapse(t *testing.T) {
	cli := client(t)
	s, err := leaseetcd.New(cli, etcdtest.Prefix(t, cli, "watchlapse"), lease.WithMaxBids(1), lease.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{"a", "b"} {
		if err := s.Put(ctx, lease.Item{ID: id, Commit: "c1"}); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(id string) lease.Ref {
		t.Helper()
		res, err := s.Bid(ctx, id, "n1", 10)
		if err != nil || res.Result == nil || res.Result.Grant == nil {
			t.Fatalf("Bid %s: %+v %v", id, res, err)
		}
		return res.Result.Grant.Ref
	}
	refB := grant("b") // before the feed starts
	ch := watch(ctx, s)
	if c := next(t, ch); !c.Reset {
		t.Fatalf("first change %+v, want a Reset", c)
	}
	ready := true
	if _, err := s.Update(ctx, refB, lease.Mutation{Ready: &ready}); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch); c.Row.ID != "b" || c.Row.Owner != "n1" || c.Row.Fence != refB.Fence || !c.Row.Ready || c.Row.State != lease.Leased {
		t.Fatalf("after Update of a grant made before the feed: %+v", c.Row)
	}
	refA := grant("a")
	if c := next(t, ch); c.Row.ID != "a" || c.Row.Owner != "n1" || c.Row.Fence != refA.Fence {
		t.Fatalf("after the grant: %+v", c.Row)
	}
	// Not renewed: both etcd leases lapse within the TTL and the leader's
	// half-second sweep.
	lapsed := map[string]lease.Row{}
	for len(lapsed) < 2 {
		c := next(t, ch)
		if c.Row.Owner != "" {
			t.Fatalf("before the lapse: %+v", c.Row)
		}
		lapsed[c.Row.ID] = c.Row
	}
	if r := lapsed["a"]; r.Fence != refA.Fence || r.State != lease.Idle || r.Ready {
		t.Fatalf("a after its lease lapsed: %+v", r)
	}
	if r := lapsed["b"]; r.Fence != refB.Fence || r.State != lease.Idle || r.Ready {
		t.Fatalf("b after its lease lapsed: %+v", r)
	}
}
