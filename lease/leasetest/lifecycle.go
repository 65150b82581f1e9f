package leasetest

import (
	"context"
	"errors"
	"testing"

	"github.com/indexkit/indexkit/lease"
)

func testCancelledContext(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ref := lease.Ref{Item: "a", Holder: "n1", Fence: 1}
	for name, err := range map[string]error{
		"Put":       e.s.Put(ctx, lease.Item{ID: "b"}),
		"Get":       second(e.s.Get(ctx, "a")),
		"Bid":       second(e.s.Bid(ctx, "a", "n1", 1)),
		"Evaluate":  second(e.s.Evaluate(ctx, "a")),
		"Renew":     second(e.s.Renew(ctx, ref)),
		"Release":   e.s.Release(ctx, ref),
		"Update":    second(e.s.Update(ctx, ref, lease.Mutation{})),
		"Heartbeat": e.s.Heartbeat(ctx, "n1"),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
	if row := e.get("a"); row.Round != 0 {
		t.Fatalf("a cancelled Bid opened an auction: %+v", row)
	}
}

func second[T any](_ T, err error) error { return err }

func testClosed(t *testing.T, s *suite) {
	e := s.open(t)
	e.put(lease.Item{ID: "a"})
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ref := lease.Ref{Item: "a", Holder: "n1", Fence: 1}
	for name, err := range map[string]error{
		"Put":       e.s.Put(e.ctx, lease.Item{ID: "b"}),
		"Get":       second(e.s.Get(e.ctx, "a")),
		"Bid":       second(e.s.Bid(e.ctx, "a", "n1", 1)),
		"Evaluate":  second(e.s.Evaluate(e.ctx, "a")),
		"Renew":     second(e.s.Renew(e.ctx, ref)),
		"Release":   e.s.Release(e.ctx, ref),
		"Update":    second(e.s.Update(e.ctx, ref, lease.Mutation{})),
		"Heartbeat": e.s.Heartbeat(e.ctx, "n1"),
	} {
		if !errors.Is(err, lease.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}
