package leasetest

import (
	"context"
	"errors"
	"sync"
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
	e.advancePast(marginU)
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

// testDeadlineFromSend checks that a holder counts its local deadline from
// the moment it sent a renewal, not from the reply: the store extends the
// lease from when it processes the request, so a holder that counts from
// the reply believes in its lease for a round trip longer than the store
// does. A store wrapper makes every Renew (Acquire's included) take delayU
// units between the request reaching the store and the reply, a delay
// larger than the margin; the holder's deadline must stay within
// send + TTL − margin after Acquire, Renew and RenewAll, and the holder
// must have given the lease up by the time the store grants it again.
func testDeadlineFromSend(t *testing.T, s *suite) {
	const delayU = 2 // > marginU: a reply-time deadline outlives the store's expiry
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	e.put(lease.Item{ID: "b"})
	refA := e.grant("a", "n1")
	refB := e.grant("b", "n1")
	slow := &slowRenewStore{Store: e.s, clk: e.clk, delay: delayU * s.u}
	opts := []lease.HolderOption{lease.WithHolderClock(e.clk), lease.WithHolderSafetyMargin(marginU * s.u)}
	// On real time the deadline is read back through ValidFor and the
	// clock, which adds a few microseconds; a reply-time deadline is off
	// by the whole delay.
	var slack time.Duration
	if s.real {
		slack = s.u / 10
	}
	check := func(what string, ls ...*lease.Lease) {
		t.Helper()
		bound := slow.lastSend().Add((ttlU-marginU)*s.u + slack)
		for _, l := range ls {
			left := l.ValidFor()
			deadline := e.clk.Now().Add(left)
			if left <= 0 || deadline.After(bound) {
				t.Fatalf("%s of %s: the holder's deadline is %v after the request was sent, want at most TTL − margin = %v (valid for %v, err %v)",
					what, l.Ref().Item, deadline.Sub(slow.lastSend()), (ttlU-marginU)*s.u, left, l.Err())
			}
		}
	}

	la, err := lease.Acquire(e.ctx, slow, refA, opts...)
	if err != nil {
		t.Fatal(err)
	}
	check("Acquire", la)
	e.advance(1)
	if err := la.Renew(e.ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	check("Renew", la)
	lb, err := lease.Acquire(e.ctx, slow, refB, opts...)
	if err != nil {
		t.Fatal(err)
	}
	check("Acquire", lb)
	e.advance(1)
	if err := lease.RenewAll(e.ctx, slow, la, lb); err != nil {
		t.Fatalf("RenewAll: %v", err)
	}
	check("RenewAll", la, lb)

	// Past the store's expiry (TTL after it processed the last renewal,
	// which the reply came delayU later than), another node wins the item:
	// by then its holder must count the lease lost.
	e.advancePast(ttlU - delayU + 0.5)
	g := e.grant("a", "n2")
	if g.Fence <= refA.Fence {
		t.Fatalf("fence %d after %d", g.Fence, refA.Fence)
	}
	for _, l := range []*lease.Lease{la, lb} {
		if left := l.ValidFor(); left > 0 {
			t.Fatalf("%s granted again after the store's expiry, yet its holder counts the lease valid for %v more", l.Ref().Item, left)
		}
	}
}

// slowRenewStore delays each Renew's reply by delay on clk, after the
// wrapped store has processed it, and remembers when the last one was
// sent.
type slowRenewStore struct {
	lease.Store
	clk   *Clock
	delay time.Duration

	mu   sync.Mutex
	sent time.Time
}

func (s *slowRenewStore) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	s.mu.Lock()
	s.sent = s.clk.Now()
	s.mu.Unlock()
	rs, err := s.Store.Renew(ctx, refs...)
	s.clk.Advance(s.delay)
	return rs, err
}

func (s *slowRenewStore) lastSend() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}
