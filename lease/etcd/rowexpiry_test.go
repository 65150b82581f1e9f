package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	"github.com/indexkit/indexkit/lease/leasetest"
)

// newStoreNoExpiry is newStore with lease.WithoutRowExpiry.
func newStoreNoExpiry(t *testing.T, clk *leasetest.Clock, opts ...lease.Option) lease.Store {
	return newStore(t, clk, append(opts, lease.WithoutRowExpiry())...)
}

// The conformance suite with renewals that write nothing: leased rows
// carry no Expiry, and everything else holds as with it.
func TestConformanceWithoutRowExpiry(t *testing.T) {
	endpoints(t)
	t.Parallel()
	leasetest.RunRealTime(t, newStoreNoExpiry, time.Second, leasetest.WithLapseLateness(750*time.Millisecond))
}

// With lease.WithoutRowExpiry a renewal writes nothing to etcd (its
// revision does not move), keeps the lease alive past its first TTL, and
// a lease left unrenewed still lapses; rows carry no Expiry.
func TestWithoutRowExpiryWritesNothing(t *testing.T) {
	cli := client(t)
	ctx := context.Background()
	prefix := "rowexpiry/" + t.Name() + "/"
	s, err := leaseetcd.New(cli, prefix, lease.WithTTL(2*time.Second), lease.WithMaxBids(1), lease.WithoutRowExpiry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ReportsRowExpiry() {
		t.Fatal("ReportsRowExpiry with WithoutRowExpiry: true")
	}
	for _, id := range []string{"kept", "dropped"} {
		if err := s.Put(ctx, lease.Item{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(id string) lease.Ref {
		res, err := s.Bid(ctx, id, "n1", 100)
		if err != nil || res.Result == nil || res.Result.Outcome != lease.Granted {
			t.Fatalf("bid on %s: %+v, %v", id, res, err)
		}
		return res.Result.Grant.Ref
	}
	kept := grant("kept")
	revision := func() int64 {
		r, err := cli.Get(ctx, prefix+"r/kept")
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	renewFor := func(d time.Duration) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); {
			rs, err := s.Renew(ctx, kept)
			if err != nil || rs[0].Err != nil || rs[0].Expiry.IsZero() {
				t.Fatalf("renew: %+v, %v", rs, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	before := revision()
	renewFor(3 * time.Second) // past the first TTL and the late lapse
	if after := revision(); after != before {
		t.Errorf("renewals moved the store's revision from %d to %d: they wrote", before, after)
	}
	if r, err := cli.Get(ctx, prefix+"e/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || r.Count != 0 {
		t.Errorf("expiry keys: %v, %v; want none", r, err)
	}
	dropped := grant("dropped")
	renewFor(3 * time.Second)
	row, err := s.Get(ctx, "kept")
	if err != nil || row.Owner != "n1" || row.State != lease.Leased || !row.Expiry.IsZero() {
		t.Errorf("renewed row: %+v, %v; want n1's, without Expiry", row, err)
	}
	if row, err := s.Get(ctx, "dropped"); err != nil || row.Owner != "" || row.State != lease.Idle {
		t.Errorf("unrenewed row after its TTL: %+v, %v; want idle", row, err)
	}
	rs, err := s.Renew(ctx, dropped, kept)
	if err != nil || !errors.Is(rs[0].Err, lease.ErrNotHeld) || rs[1].Err != nil {
		t.Errorf("renew of a lapsed and a live lease: %+v, %v", rs, err)
	}
	if err := s.Release(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Renew(ctx, kept); err != nil || !errors.Is(rs[0].Err, lease.ErrNotHeld) {
		t.Errorf("renew after release: %+v, %v", rs, err)
	}
}
