package leasetest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
)

func testDoneBeforeRegrant(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	var lost atomic.Int32
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u),
		lease.WithHolderHooks(lease.HolderHooks{LeaseLost: func(lease.Ref, error) { lost.Add(1) }}))
	if err != nil {
		t.Fatal(err)
	}
	e.advance(ttlU - marginU - 0.5)
	select {
	case <-l.Done():
		t.Fatal("Done closed before the local deadline")
	default:
	}
	if l.ValidFor() <= 0 {
		t.Fatal("ValidFor ≤ 0 before the local deadline")
	}
	e.advance(0.5)
	waitDone(t, l)
	if !errors.Is(l.Err(), lease.ErrNotHeld) || lost.Load() != 1 {
		t.Fatalf("Err = %v, lost hooks %d", l.Err(), lost.Load())
	}
	// The holder has given up, yet the store has not expired the lease:
	// nobody else can win the item yet.
	e.bidErr("a", "n2", 10, lease.ErrLeased)
	e.advance(marginU)
	g := e.grant("a", "n2")
	if g.Fence <= ref.Fence {
		t.Fatalf("fence %d after %d", g.Fence, ref.Fence)
	}
	if _, err := l.Update(e.ctx, lease.Mutation{}); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Update on a lost lease: %v", err)
	}
}

func waitDone(t *testing.T, l *lease.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed")
	}
}

func testDoneOnRefusal(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ref := e.grant("a", "n1")
	l, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU*s.u))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.advance(ttlU / 2)
		if err := l.Renew(e.ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	// Another party releases on the holder's behalf (an operator).
	if err := e.s.Release(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(e.ctx); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Renew after release: %v", err)
	}
	waitDone(t, l)
	if _, err := lease.Acquire(e.ctx, e.s, ref, lease.WithHolderClock(e.clk)); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("Acquire of a released lease: %v", err)
	}
}
