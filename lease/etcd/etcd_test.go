package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
	"github.com/indexkit/indexkit/lease/leasetest"
)

// The suite on real time against a real etcd: etcd leases count whole
// seconds and lapse up to about half a second late, so the unit is a
// second (TTL 10 s, window 6 s).
func TestConformanceRealTime(t *testing.T) {
	endpoints(t) // fail or skip once, not in every subtest
	leasetest.RunRealTime(t, newStore, time.Second)
}

func TestNewRejectsBadArguments(t *testing.T) {
	if _, err := leaseetcd.New(nil, "p/"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New(nil client): %v", err)
	}
	cli := client(t)
	for _, c := range []struct {
		name   string
		prefix string
		opts   []lease.Option
	}{
		{"empty prefix", "", nil},
		{"TTL 0", "p/", []lease.Option{lease.WithTTL(0)}},
		{"TTL 1.5s", "p/", []lease.Option{lease.WithTTL(1500 * time.Millisecond)}},
		{"window 500ms", "p/", []lease.Option{lease.WithAuctionWindow(500 * time.Millisecond)}},
		{"grace 200ms", "p/", []lease.Option{lease.WithPendingGrace(200 * time.Millisecond)}},
		{"liveness 2.5s", "p/", []lease.Option{lease.WithDynamicMaxBids(2500 * time.Millisecond)}},
	} {
		if _, err := leaseetcd.New(cli, c.prefix, c.opts...); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("New(%s): %v, want ErrInvalid", c.name, err)
		}
	}
	s, err := leaseetcd.New(cli, "p/")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaxBids(-1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("SetMaxBids(-1): %v", err)
	}
}
