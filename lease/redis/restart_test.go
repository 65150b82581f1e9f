package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// A restart that loses every key (no persistence, SIGKILL) must not let a
// fence repeat or go backwards: the fence never falls below the server's
// clock in microseconds. The old holder's operations are refused, and the
// script cache, lost too, is reloaded by the NOSCRIPT fallback.
func TestFencesIncreaseAcrossDataLosingRestart(t *testing.T) {
	srv := redistest.StartServer(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	s, err := leaseredis.New(c, "restart:")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last lease.Fence
	var old lease.Ref
	for i := range 3 {
		ref := grant(t, s, "a", fmt.Sprintf("n%d", i))
		if ref.Fence <= last {
			t.Fatalf("before restart: fence %d after %d", ref.Fence, last)
		}
		last, old = ref.Fence, ref
		if i < 2 {
			if err := s.Release(ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
	}
	for restart := range 2 {
		srv.Kill()
		srv.Start()
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
			t.Fatalf("restart %d: DBSIZE %d, %v; want an empty server", restart, n, err)
		}
		// The old grant is gone with the data.
		rs, err := s.Renew(ctx, old)
		if err != nil {
			t.Fatalf("restart %d: Renew: %v", restart, err)
		}
		if !errors.Is(rs[0].Err, lease.ErrNotFound) {
			t.Fatalf("restart %d: Renew of a lost grant: %v", restart, rs[0].Err)
		}
		ref := grant(t, s, "a", "after")
		if ref.Fence <= last {
			t.Fatalf("restart %d: fence %d after %d: fences went backwards", restart, ref.Fence, last)
		}
		t.Logf("restart %d: fence %d before, %d after", restart, last, ref.Fence)
		if err := s.Release(ctx, old); !errors.Is(err, lease.ErrStaleFence) {
			t.Fatalf("restart %d: Release with the pre-restart fence: %v", restart, err)
		}
		last, old = ref.Fence, ref
	}
}

// The loss guard (lease.WithLossGuard) closes the window that a restart
// losing every key opens: without it the item is granted again at once,
// while the holder from before the loss still counts its lease valid;
// with it no grant comes until one TTL after the store found its data
// gone, by which time that holder's Done has closed. A fresh store cannot
// be told from one that lost its data, so its first grant waits one TTL
// too.
func TestLossGuard(t *testing.T) {
	const ttl = 2 * time.Second
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("guard=%v", guarded), func(t *testing.T) {
			srv := redistest.StartServer(t)
			c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			opts := []lease.Option{lease.WithTTL(ttl), lease.WithAuctionWindow(ttl), lease.WithMaxBids(1)}
			if guarded {
				opts = append(opts, lease.WithLossGuard())
			}
			s, err := leaseredis.New(c, "guard:", opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()

			start := time.Now()
			old := bidUntilGranted(t, s, "a", "old")
			if waited := time.Since(start); guarded && waited < ttl-100*time.Millisecond {
				t.Fatalf("a fresh guarded store granted after %v, before one TTL (%v)", waited, ttl)
			} else if !guarded && waited > ttl/2 {
				t.Fatalf("an unguarded store took %v to grant a one-bid auction", waited)
			}
			holder, err := lease.Acquire(ctx, s, old.Ref)
			if err != nil {
				t.Fatal(err)
			}

			srv.Kill() // no persistence: every key is gone
			srv.Start()
			regrant := bidUntilGranted(t, s, "a", "new")
			// ValidFor reads the old holder's own clock at the moment of the
			// new grant (and closes Done if its deadline has passed).
			left := holder.ValidFor()
			t.Logf("new grant %v after the old one; the old holder had %v left", regrant.Expiry.Sub(old.Expiry), left)
			if regrant.Fence <= old.Fence {
				t.Fatalf("fence %d after %d", regrant.Fence, old.Fence)
			}
			if guarded {
				select {
				case <-holder.Done():
				default:
					t.Fatalf("granted again while the holder from before the loss still held it (%v left)", left)
				}
				if !regrant.Expiry.Add(-ttl).After(old.Expiry) {
					t.Fatalf("granted again at %v, before the old grant's expiry %v", regrant.Expiry.Add(-ttl), old.Expiry)
				}
			} else if left <= 0 {
				t.Fatalf("without the guard the old holder should still count its lease valid at the new grant (the window the guard closes); it had %v left", left)
			}
		})
	}
}

// bidUntilGranted puts item id (one bid closes its auction), bids for node
// and evaluates until the auction grants, within a few TTLs.
func bidUntilGranted(t *testing.T, s lease.Store, id, node string) *lease.Grant {
	t.Helper()
	ctx := t.Context()
	if err := s.Put(ctx, lease.Item{ID: id, MaxBids: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Bid(ctx, id, node, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Result
	deadline := time.Now().Add(10 * time.Second)
	for r == nil || r.Outcome == lease.NotDue {
		if time.Now().After(deadline) {
			t.Fatalf("no grant of %q to %q within 10 s: %+v", id, node, r)
		}
		wait := 20 * time.Millisecond
		if r != nil && !r.Deadline.IsZero() {
			wait = max(wait, time.Until(r.Deadline))
		}
		time.Sleep(wait)
		e, err := s.Evaluate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		r = &e
	}
	if r.Outcome != lease.Granted || r.Grant.Holder != node {
		t.Fatalf("auction of %q: %+v, want a grant to %q", id, r, node)
	}
	return r.Grant
}
