package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/redistest"
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
