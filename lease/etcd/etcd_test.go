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
// seconds, so the unit is a second (TTL 10 s, window 6 s). The leader
// revokes expired leases every 500 ms, and the revocation is one more raft
// round: keys lapse up to about half a second late (never early), and the
// suite allows 750 ms where it expects a lapse. It runs in parallel with
// the package's other long tests, which mostly sleep.
func TestConformanceRealTime(t *testing.T) {
	endpoints(t) // fail or skip once, not in every subtest
	t.Parallel()
	leasetest.RunRealTime(t, newStore, time.Second, leasetest.WithLapseLateness(750*time.Millisecond))
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

// The change-feed suite every Watcher passes, at etcd's one-second unit,
// in parallel with the other long tests.
func TestWatchSuite(t *testing.T) {
	endpoints(t)
	t.Parallel()
	leasetest.RunWatch(t, newStore, time.Second)
}

// A static threshold changed while the store runs takes effect at the
// next Bid or Evaluate.
func TestMaxBidsSetter(t *testing.T) {
	endpoints(t)
	leasetest.RunMaxBidsSetter(t, newStore)
}
