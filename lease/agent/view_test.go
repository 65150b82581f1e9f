package agent

import (
	"context"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// listing is a lease.Lister of fixed rows that applies a change to the
// view in the middle of its walk, as a feed does while a scan lists.
type listing struct {
	rows   []lease.Row
	during func()
}

func (l listing) Rows(context.Context) iter.Seq2[lease.Row, error] {
	return func(yield func(lease.Row, error) bool) {
		for i, r := range l.rows {
			if i == 1 && l.during != nil {
				l.during()
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func TestViewKeepsNewerRows(t *testing.T) {
	v := newView()
	granted := lease.Row{Item: lease.Item{ID: "a"}, Version: 1, Round: 1, Fence: 5, Owner: "n", State: lease.Leased}
	open := lease.Row{Item: lease.Item{ID: "a"}, Version: 1, Round: 1, Bids: 1}
	v.apply(granted)
	v.apply(open) // an older row, as a listing can show after the feed
	if got := rowOf(v, "a"); got.Fence != 5 {
		t.Fatalf("an older row replaced a newer one: %+v", got)
	}

	// A listing that read "a" before a grant the feed reports during the
	// walk keeps the grant.
	now := time.Now()
	l := listing{rows: []lease.Row{open, {Item: lease.Item{ID: "b"}, Version: 1}}, during: func() { v.apply(granted) }}
	if err := v.list(context.Background(), l, now); err != nil {
		t.Fatal(err)
	}
	if got := rowOf(v, "a"); got.Fence != 5 || len(v.rows.rows) != 2 {
		t.Fatalf("after a listing that raced a grant: a %+v, %d rows", got, len(v.rows.rows))
	}

	// A listing replaces the view: rows a store lost and put again (lower
	// fence and version) are not hidden by the old ones.
	lost := lease.Row{Item: lease.Item{ID: "a"}, Version: 1}
	if err := v.list(context.Background(), listing{rows: []lease.Row{lost}}, now); err != nil {
		t.Fatal(err)
	}
	if got := rowOf(v, "a"); got.Fence != 0 || len(v.rows.rows) != 1 {
		t.Fatalf("after a listing of a lost catalog: a %+v, %d rows", got, len(v.rows.rows))
	}
	if v.due(now, time.Minute) || !v.due(now.Add(time.Minute), time.Minute) {
		t.Fatal("a listing should be due one interval after the last")
	}
	v.reset()
	if !v.due(now, time.Minute) {
		t.Fatal("a Reset should make a listing due at once")
	}
}

// A lease the view shows expired by more than the margin reads as lapsed.
func TestViewSnapshotLapses(t *testing.T) {
	v := newView()
	now := time.Now()
	v.apply(lease.Row{Item: lease.Item{ID: "old"}, Fence: 1, Owner: "x", State: lease.Leased, Expiry: now.Add(-2 * time.Second)})
	v.apply(lease.Row{Item: lease.Item{ID: "edge"}, Fence: 1, Owner: "x", State: lease.Leased, Expiry: now.Add(-time.Second / 2)})
	for r := range v.snapshot(now, time.Second) {
		switch {
		case r.ID == "old" && r.Owner != "":
			t.Errorf("a lease expired 2s ago with a 1s margin reads as held: %+v", r)
		case r.ID == "edge" && r.Owner != "x":
			t.Errorf("a lease expired within the margin reads as lapsed: %+v", r)
		}
	}
}

// Under a feed that reports lapses the view shows a lease held, whatever
// its Expiry, until the feed shows it lapsed.
func TestViewSnapshotFeedReportsLapses(t *testing.T) {
	v := newView()
	v.lapses = true
	now := time.Now()
	held := lease.Row{Item: lease.Item{ID: "a"}, Fence: 1, Owner: "x", State: lease.Leased, Expiry: now.Add(-time.Hour)}
	v.apply(held)
	for r := range v.snapshot(now, time.Second) {
		if r.Owner != "x" {
			t.Fatalf("a lease the feed did not report lapsed reads as lapsed: %+v", r)
		}
	}
	lapsed := held
	lapsed.Owner, lapsed.State, lapsed.Expiry = "", lease.Idle, time.Time{}
	v.apply(lapsed)
	for r := range v.snapshot(now, time.Second) {
		if r.Owner != "" {
			t.Fatalf("the feed's lapse did not reach the view: %+v", r)
		}
	}
}

// rowOf is the view's row of id, the zero Row if it has none.
func rowOf(v *view, id string) lease.Row {
	if i, ok := v.rows.at[id]; ok {
		return v.rows.rows[i]
	}
	return lease.Row{}
}

// A snapshot yields every row once, starting from a row chosen at random,
// so that nodes walking the same catalog do not all meet its due auctions
// in the same order.
func TestViewSnapshotOrder(t *testing.T) {
	v := newView()
	const n = 10
	for i := range n {
		v.apply(lease.Row{Item: lease.Item{ID: fmt.Sprintf("i%d", i)}, Version: 1})
	}
	firsts := map[string]bool{}
	for range 40 {
		seen := map[string]int{}
		first := ""
		for r := range v.snapshot(time.Now(), time.Second) {
			if first == "" {
				first = r.ID
			}
			seen[r.ID]++
		}
		if len(seen) != n {
			t.Fatalf("a snapshot yielded %d distinct rows, want %d: %v", len(seen), n, seen)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("a snapshot yielded %s %d times", id, c)
			}
		}
		firsts[first] = true
	}
	// 40 snapshots from one start out of 10 has odds of 10^-39.
	if len(firsts) < 2 {
		t.Errorf("40 snapshots all began at %v", firsts)
	}
}
