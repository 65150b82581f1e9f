package leasetest

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// latencyStore delays each call of a history's clients by a random time
// below max before it reaches the store and again before its reply
// reaches the client, as a network between them would. The calls of
// different clients then overlap however fast the store answers, and
// the store sees them arrive, and takes them up, in an order that the
// clients' call times do not fix.
type latencyStore struct {
	lease.Store
	max time.Duration
}

func withLatency(s lease.Store, max time.Duration) lease.Store {
	if max <= 0 {
		return s
	}
	return latencyStore{s, max}
}

func (s latencyStore) wait() { time.Sleep(time.Duration(rand.Int64N(int64(s.max)))) }

func (s latencyStore) Get(ctx context.Context, item string) (lease.Row, error) {
	s.wait()
	defer s.wait()
	return s.Store.Get(ctx, item)
}

func (s latencyStore) Bid(ctx context.Context, item, node string, free int64) (lease.BidResult, error) {
	s.wait()
	defer s.wait()
	return s.Store.Bid(ctx, item, node, free)
}

func (s latencyStore) Evaluate(ctx context.Context, item string) (lease.AuctionResult, error) {
	s.wait()
	defer s.wait()
	return s.Store.Evaluate(ctx, item)
}

func (s latencyStore) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	s.wait()
	defer s.wait()
	return s.Store.Renew(ctx, refs...)
}

func (s latencyStore) Release(ctx context.Context, ref lease.Ref) error {
	s.wait()
	defer s.wait()
	return s.Store.Release(ctx, ref)
}

func (s latencyStore) Update(ctx context.Context, ref lease.Ref, m lease.Mutation) (lease.Row, error) {
	s.wait()
	defer s.wait()
	return s.Store.Update(ctx, ref, m)
}
