package redis_test

import (
	"errors"
	"testing"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// TestBidMaxFreeEdge: an offer of exactly MaxFree is taken and still
// ranked apart from MaxFree-1 (both are exact as Lua numbers); MaxFree+1
// is refused with ErrInvalid.
func TestBidMaxFreeEdge(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	s, err := leaseredis.New(c, redistest.Prefix(t, c, "lease"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		item       string
		first, sec int64
		winner     string
	}{
		{"a", leaseredis.MaxFree - 1, leaseredis.MaxFree, "n2"},
		{"b", leaseredis.MaxFree, leaseredis.MaxFree - 1, "n1"},
	} {
		if err := s.Put(ctx, lease.Item{ID: tc.item, MaxBids: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Bid(ctx, tc.item, "n1", tc.first); err != nil {
			t.Fatalf("item %s: bid of %d: %v", tc.item, tc.first, err)
		}
		b, err := s.Bid(ctx, tc.item, "n2", tc.sec)
		if err != nil {
			t.Fatalf("item %s: bid of %d: %v", tc.item, tc.sec, err)
		}
		if b.Result == nil || b.Result.Grant == nil || b.Result.Grant.Holder != tc.winner {
			t.Fatalf("item %s: offers %d then %d: result %+v, want a grant to %s", tc.item, tc.first, tc.sec, b.Result, tc.winner)
		}
	}
	if err := s.Put(ctx, lease.Item{ID: "c", MaxBids: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bid(ctx, "c", "n1", leaseredis.MaxFree+1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("bid of MaxFree+1: %v, want ErrInvalid", err)
	}
}
