package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/lane"
	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/leasetest"
	"github.com/indexkit/indexkit/lease/memory"
)

func newStore(t *testing.T, clk *leasetest.Clock, opts ...lease.Option) lease.Store {
	s, err := memory.New(append(opts, lease.WithClock(clk))...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { leasetest.Run(t, newStore) }

// The suite on real time, as a server-clock backend runs it: slower, so
// only outside -short. Its subtests run all at once; the unit leaves half
// of it (50 ms) between a holder's deadline and the store's expiry, slack
// enough for a loaded CI machine running every package's tests at once.
func TestConformanceRealTime(t *testing.T) {
	lane.Integration(t, "real-time suite, about 20 s (the fake-clock suite runs in both lanes)")
	leasetest.RunRealTime(t, newStore, 100*time.Millisecond)
}

func TestModel(t *testing.T) { leasetest.RunModel(t, newStore, 3000) }

// The untimed model is the one lease/redis runs; here it checks the
// variant itself against a backend that also passes the timed one.
func TestModelUntimed(t *testing.T) { leasetest.RunModelUntimed(t, newStore, 1000) }

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []lease.Option{
		lease.WithTTL(0), lease.WithAuctionWindow(-1), lease.WithMaxBids(-1),
		lease.WithStarveAfter(0), lease.WithClock(nil),
	} {
		if _, err := memory.New(o); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("New: %v, want ErrInvalid", err)
		}
	}
}

func TestMaxBidsSetter(t *testing.T) { leasetest.RunMaxBidsSetter(t, newStore) }
