package redis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/netproxy"
	"github.com/indexkit/indexkit/internal/redistest"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// Concurrent histories against a Redis reached through internal/netproxy,
// with a network fault injected mid-history: from the delayFrom-th store
// call of a history to the delayTo-th, every byte waits delayUp on its way
// to Redis and delayDown on its way back (a round trip of 5 ms against a
// 40 ms TTL), so calls in flight when the delay starts or ends straddle
// it and leases lapse while their holders wait on the network. Each
// history must still be linearizable and keep its fences; a history whose
// calls never reached the delay fails, so the fault is known to be in it.
func TestLinearizableNetworkDelay(t *testing.T) {
	redistest.Client(t, redistest.Addr()) // fail or skip once, not in every history
	const (
		delayFrom, delayTo = 300, 900 // of about 1200 calls per history
		delayUp, delayDown = 3 * time.Millisecond, 2 * time.Millisecond
	)
	leasetest.RunLinearizable(t, func(t *testing.T, _ *leasetest.Clock, opts ...lease.Option) lease.Store {
		p := startProxy(t, redistest.Addr())
		c := redistest.Client(t, p.Addr())
		s, err := leaseredis.New(c, redistest.Prefix(t, c, "lease"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		d := &delayedStore{Store: s, p: p, from: delayFrom, to: delayTo, up: delayUp, down: delayDown}
		t.Cleanup(func() {
			p.SetDelay(0, 0) // the key cleanup goes through the proxy too
			if n := d.calls.Load(); n < delayTo {
				t.Errorf("the history made %d store calls, fewer than the %d that end the delay", n, delayTo)
			} else {
				t.Logf("store calls %d to %d (of %d) delayed %v up, %v down", delayFrom, delayTo, n, delayUp, delayDown)
			}
		})
		return d
	})
}

// delayedStore counts the calls to its store and sets the proxy's delay
// when the count reaches from, and lifts it at to.
type delayedStore struct {
	lease.Store
	p        *netproxy.Proxy
	from, to int64
	up, down time.Duration
	calls    atomic.Int64
}

func (s *delayedStore) tick() {
	switch s.calls.Add(1) {
	case s.from:
		s.p.SetDelay(s.up, s.down)
	case s.to:
		s.p.SetDelay(0, 0)
	}
}

func (s *delayedStore) Put(ctx context.Context, it lease.Item) error {
	s.tick()
	return s.Store.Put(ctx, it)
}

func (s *delayedStore) Get(ctx context.Context, id string) (lease.Row, error) {
	s.tick()
	return s.Store.Get(ctx, id)
}

func (s *delayedStore) Bid(ctx context.Context, id, node string, free int64) (lease.BidResult, error) {
	s.tick()
	return s.Store.Bid(ctx, id, node, free)
}

func (s *delayedStore) Evaluate(ctx context.Context, id string) (lease.AuctionResult, error) {
	s.tick()
	return s.Store.Evaluate(ctx, id)
}

func (s *delayedStore) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	s.tick()
	return s.Store.Renew(ctx, refs...)
}

func (s *delayedStore) Release(ctx context.Context, ref lease.Ref) error {
	s.tick()
	return s.Store.Release(ctx, ref)
}

func (s *delayedStore) Update(ctx context.Context, ref lease.Ref, m lease.Mutation) (lease.Row, error) {
	s.tick()
	return s.Store.Update(ctx, ref, m)
}
