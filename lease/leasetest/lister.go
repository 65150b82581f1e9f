package leasetest

import (
	"fmt"
	"testing"

	"github.com/indexkit/indexkit/lease"
)

// testLister checks lease.Lister, for stores that implement it: every row
// put is listed once, with the same content Get returns, and an early
// break stops the walk. The catalog is larger than one batch of a
// paginated backend (lease/redis reads 256 IDs at a time).
func testLister(t *testing.T, s *suite) {
	e := s.open(t)
	l, ok := e.s.(lease.Lister)
	if !ok {
		t.Skip("the store does not implement lease.Lister")
	}
	const n = 600
	for i := range n {
		e.put(lease.Item{ID: fmt.Sprintf("item-%03d", i), Commit: fmt.Sprint(i), Size: int64(i)})
	}
	e.bid("item-007", "a", 100) // an open auction
	e.put(lease.Item{ID: "item-008", Commit: "8", Size: 8, MaxBids: 1})
	e.bid("item-008", "b", 100) // granted
	seen := map[string]int{}
	for r, err := range l.Rows(e.ctx) {
		if err != nil {
			t.Fatalf("Rows: %v", err)
		}
		seen[r.ID]++
		want := e.get(r.ID)
		if r.Commit != want.Commit || r.Size != want.Size || r.Round != want.Round || r.Bids != want.Bids ||
			r.Owner != want.Owner || r.Fence != want.Fence || r.State != want.State || r.Ready != want.Ready ||
			!r.Expiry.Equal(want.Expiry) || !r.AuctionDeadline.Equal(want.AuctionDeadline) ||
			r.Version != want.Version || r.MaxBids != want.MaxBids || r.Unleased != want.Unleased {
			t.Errorf("Rows gave %+v, Get gives %+v", r, want)
		}
	}
	if r := e.get("item-008"); r.Owner != "b" {
		t.Fatalf("item-008 not granted to b: %+v", r)
	}
	if len(seen) != n {
		t.Errorf("Rows listed %d items, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("Rows listed %s %d times", id, c)
		}
	}
	count := 0
	for range l.Rows(e.ctx) {
		if count++; count == 3 {
			break
		}
	}
	if count != 3 {
		t.Errorf("Rows after a break at 3: %d rows", count)
	}
}
