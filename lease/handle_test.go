package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	"github.com/indexkit/indexkit/lease/memory"
)

// Acquire takes the holder's settings only: an invalid one is refused
// before the store is called, and the default margin is a tenth of the
// TTL the store grants, not of a TTL the holder would have to repeat.
func TestAcquireOptions(t *testing.T) {
	ctx := context.Background()
	clk := leasetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(lease.WithClock(clk), lease.WithTTL(time.Second), lease.WithMaxBids(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(ctx, lease.Item{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Bid(ctx, "a", "n1", 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := res.Result.Grant.Ref

	for name, opt := range map[string]lease.HolderOption{
		"nil clock":       lease.WithHolderClock(nil),
		"negative margin": lease.WithHolderSafetyMargin(-time.Second),
	} {
		if _, err := lease.Acquire(ctx, s, ref, opt); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: Acquire: %v, want ErrInvalid", name, err)
		}
	}

	l, err := lease.Acquire(ctx, s, ref, lease.WithHolderClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.ValidFor(), 900*time.Millisecond; got != want {
		t.Errorf("ValidFor with the default margin: %v, want %v", got, want)
	}
	if _, err := lease.Acquire(ctx, s, ref, lease.WithHolderClock(clk), lease.WithHolderSafetyMargin(time.Second)); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Acquire with a margin of the whole TTL: %v, want ErrInvalid", err)
	}
}
