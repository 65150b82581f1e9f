package leasetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

func testRenew(t *testing.T, s *suite) {
	e := s.open(t)
	// refs[0] is granted last, so that in real time the other grants do
	// not eat into the margin between its grant and its renewal.
	refs := make([]lease.Ref, 5)
	for i := len(refs) - 1; i >= 0; i-- {
		id := fmt.Sprintf("i%d", i)
		e.put(lease.Item{ID: id})
		refs[i] = e.grant(id, fmt.Sprintf("n%d", i))
	}
	e.advance(ttlU - 2)
	rs := e.renew(refs[0])
	if rs[0].Err != nil || rs[0].TTL != ttlU*s.u {
		t.Fatalf("Renew: %+v", rs[0])
	}
	e.advancePast(3) // refs[1:] expire, refs[0] was renewed
	want := rs[0].Expiry
	if !rowsCarryExpiry(e.s) {
		want = time.Time{}
	}
	if row := e.get("i0"); row.Owner != "n0" || !row.Expiry.Equal(want) {
		t.Fatalf("renewed row: %+v, want expiry %v", row, want)
	}
	// A batch where some leases are gone.
	rs = e.renew(refs...)
	if rs[0].Err != nil || rs[0].Ref != refs[0] {
		t.Fatalf("batch renew of a held lease: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if !errors.Is(r.Err, lease.ErrNotHeld) {
			t.Fatalf("batch renew of an expired lease: %+v", r)
		}
	}
	rs = e.renew(lease.Ref{Item: "missing", Holder: "x", Fence: 1})
	if !errors.Is(rs[0].Err, lease.ErrNotFound) {
		t.Fatalf("renew of a missing item: %v", rs[0].Err)
	}
	wrong := refs[0]
	wrong.Holder = "intruder"
	if rs := e.renew(wrong); !errors.Is(rs[0].Err, lease.ErrNotHeld) {
		t.Fatalf("renew by another holder: %v", rs[0].Err)
	}
}

func testRenewAfterExpiry(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	e.advancePast(ttlU)
	if rs := e.renew(ref); !errors.Is(rs[0].Err, lease.ErrNotHeld) {
		t.Fatalf("renew after expiry: %v", rs[0].Err)
	}
	row := e.get("a")
	if row.Owner != "" || row.State != lease.Idle || row.Fence != ref.Fence {
		t.Fatalf("expired row: %+v", row)
	}
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("update after expiry: %v", err)
	}
}

func testRelease(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	bad := ref
	bad.Fence--
	if err := e.s.Release(e.ctx, bad); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("release with an old fence: %v", err)
	}
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if row := e.get("a"); row.Owner != "" || row.State != lease.Idle {
		t.Fatalf("released row: %+v", row)
	}
	if err := e.s.Release(e.ctx, ref); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("second release: %v", err)
	}
	// Released, the item is auctioned again at once.
	ref2 := e.grant("a", "n2")
	if ref2.Fence <= ref.Fence {
		t.Fatalf("fence %d after %d", ref2.Fence, ref.Fence)
	}
}

func testDrain(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u))
	if err != nil {
		t.Fatal(err)
	}
	var during lease.Row
	err = l.Drain(e.ctx, func(ctx context.Context) error {
		during = e.get("a")
		e.bidErr("a", "n2", 10, lease.ErrLeased)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during.State != lease.Draining || during.Owner != "n1" {
		t.Fatalf("row while draining: %+v", during)
	}
	if row := e.get("a"); row.State != lease.Idle || row.Owner != "" {
		t.Fatalf("row after drain: %+v", row)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after drain")
	}
}

func testUpdate(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a", Commit: "c0"})
	ref := e.grant("a", "n1")
	commit, ready, at := "c1", true, e.clk.Now().Truncate(time.Millisecond)
	row, err := e.s.Update(e.ctx, ref, lease.Mutation{Commit: &commit, Ready: &ready, LastIndexed: &at})
	if err != nil {
		t.Fatal(err)
	}
	if row.Commit != "c1" || !row.Ready || !row.LastIndexed.Equal(at) {
		t.Fatalf("updated row: %+v", row)
	}
	old := row.Version - 1
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{IfVersion: &old}); !errors.Is(err, lease.ErrVersionConflict) {
		t.Fatalf("update with an old version: %v", err)
	}
	if _, err := e.s.Update(e.ctx, ref, lease.Mutation{IfVersion: &row.Version}); err != nil {
		t.Fatalf("update with the current version: %v", err)
	}
	other := ref
	other.Holder = "n2"
	if _, err := e.s.Update(e.ctx, other, lease.Mutation{Ready: &ready}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("update by a non-owner: %v", err)
	}
	// A new grant starts unready.
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	e.grant("a", "n2")
	if row := e.get("a"); row.Ready || row.Commit != "c1" {
		t.Fatalf("after regrant: %+v", row)
	}
}

// testFencesIncrease grants one item 30 times, each grant after the last
// was released or had expired. The TTL is two units, so that on real time
// the expiries take 15 short waits rather than 15 of the suite's TTL.
func testFencesIncrease(t *testing.T, s *suite) {
	const ttl = 2
	e := s.open(t, lease.WithTTL(ttl*s.u))
	e.put(lease.Item{ID: "a"})
	var last lease.Fence
	for i := range 30 {
		ref := e.grant("a", fmt.Sprintf("n%d", i%3))
		if ref.Fence <= last {
			t.Fatalf("grant %d: fence %d after %d", i, ref.Fence, last)
		}
		last = ref.Fence
		if i%2 == 0 {
			if err := e.s.Release(e.ctx, ref); err != nil {
				t.Fatal(err)
			}
		} else {
			e.advancePast(ttl)
		}
	}
}

func testStaleFence(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	old := e.grant("a", "n1")
	e.advancePast(ttlU)
	cur := e.grant("a", "n2")
	commit := "zombie"
	if _, err := e.s.Update(e.ctx, old, lease.Mutation{Commit: &commit}); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("update with a stale fence: %v", err)
	}
	if rs := e.renew(old); !errors.Is(rs[0].Err, lease.ErrStaleFence) {
		t.Fatalf("renew with a stale fence: %v", rs[0].Err)
	}
	if err := e.s.Release(e.ctx, old); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("release with a stale fence: %v", err)
	}
	if row := e.get("a"); row.Owner != "n2" || row.Commit == "zombie" || row.Fence != cur.Fence {
		t.Fatalf("row after stale writes: %+v", row)
	}
	if err := lease.CheckFence(cur.Fence, old.Fence); !errors.Is(err, lease.ErrStaleFence) {
		t.Fatalf("CheckFence: %v", err)
	}
}

// testRenewLapsed checks that a lease left past its expiry stays lost: its
// holder's Renew is refused with ErrNotHeld and the row does not name the
// holder, both when nobody has bid on the item since the expiry ("a") and
// when another node has opened an auction on it that is still open ("b").
// A store that renews a lapsed lease because nobody else has taken the
// item yet fails here.
func testRenewLapsed(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	refA := e.grant("a", "n1")
	refB := e.grant("b", "n1")
	// b now takes three bids, so one bid leaves its auction open.
	e.put(lease.Item{ID: "b", MaxBids: 3})
	e.advancePast(ttlU + 0.5) // past both expiries on the store's clock
	if r := e.bid("b", "n2", 100); r.Result != nil {
		t.Fatalf("bid on b closed the auction: %+v", r.Result)
	}

	for _, c := range []struct {
		ref  lease.Ref
		bids int
		what string
	}{
		{refA, 0, "nobody bid since"},
		{refB, 1, "another node bid since"},
	} {
		rs := e.renew(c.ref)
		if !errors.Is(rs[0].Err, lease.ErrNotHeld) {
			t.Fatalf("renew of a lapsed lease (%s) = %+v, want ErrNotHeld", c.what, rs[0])
		}
		row := e.get(c.ref.Item)
		if row.Owner != "" || row.State != lease.Idle || row.Fence != c.ref.Fence || row.Bids != c.bids || !row.Expiry.IsZero() {
			t.Fatalf("row of a lapsed lease (%s) after its holder's renew: %+v", c.what, row)
		}
		if _, err := e.s.Update(e.ctx, c.ref, lease.Mutation{}); !errors.Is(err, lease.ErrNotHeld) {
			t.Fatalf("update of a lapsed lease (%s): %v", c.what, err)
		}
	}
	// In a batch, beside a live lease.
	refC := e.grant("a", "n3")
	if rs := e.renew(refC, refB); rs[0].Err != nil || !errors.Is(rs[1].Err, lease.ErrNotHeld) {
		t.Fatalf("batch renew of a live and a lapsed lease: %+v", rs)
	}
	if refC.Fence <= refA.Fence {
		t.Fatalf("fence %d after %d", refC.Fence, refA.Fence)
	}
	// The open auction on b runs its course and n2 wins it.
	e.advancePast(windowU)
	r := e.evaluate("b")
	if g := wantGrant(t, &r, "n2"); g.Fence <= refB.Fence {
		t.Fatalf("fence %d after %d", g.Fence, refB.Fence)
	}
}

// rowsCarryExpiry reports whether s sets Expiry on leased rows: unless it
// says otherwise (lease.RowExpiryReporter), a store does.
func rowsCarryExpiry(s lease.Store) bool {
	r, ok := s.(lease.RowExpiryReporter)
	return !ok || r.ReportsRowExpiry()
}
