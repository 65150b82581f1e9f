// Built without -race for the reason given in manager_test.go.

//go:build !race

package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/lease"
	"github.com/indexkit/indexkit/lease/memory"
)

type nopIndexer struct{}

func (nopIndexer) Index(_ context.Context, r lease.Row) (int64, error) { return r.Size, nil }
func (nopIndexer) Drop(string)                                         {}

// Each backoff waits a full-jitter draw from (0, base×2^attempts], capped:
// the bound doubles per attempt up to the cap, and the draws reach close
// to it.
func TestBackoffGrowsToCap(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const base, capD = 10 * time.Millisecond, 80 * time.Millisecond
	m, err := NewManager(s, "n", WithIndexer(nopIndexer{}), WithBidBackoff(base, capD))
	if err != nil {
		t.Fatal(err)
	}
	for k := range 8 {
		bound := min(base<<k, capD)
		var top time.Duration
		for range 300 {
			m.backoff["a"] = backoff{attempts: k}
			before := time.Now()
			m.backOff("a")
			after := time.Now()
			b := m.backoff["a"]
			if b.attempts != k+1 {
				t.Fatalf("attempts %d after backing off from %d", b.attempts, k)
			}
			lo, hi := b.until.Sub(after), b.until.Sub(before)
			if hi <= 0 || lo > bound {
				t.Fatalf("attempt %d: wait in [%v, %v], want (0, %v]", k, lo, hi, bound)
			}
			top = max(top, hi)
		}
		if top < bound*3/4 {
			t.Errorf("attempt %d: longest of 300 waits %v, want close to the bound %v", k, top, bound)
		}
	}
}

// After a lost bid the manager does not bid on the item again before its
// backoff ends, and the attempts grow with each loss.
func TestBackoffDelaysNextBid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := memory.New(lease.WithMaxBids(2), lease.WithAuctionWindow(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Put(ctx, lease.Item{ID: "a", Size: 10}); err != nil {
			t.Fatal(err)
		}
		bids := make(chan time.Time, 100)
		m, err := NewManager(s, "n", WithIndexer(nopIndexer{}), WithBudget(100),
			WithScanInterval(100*time.Millisecond), WithBidBackoff(time.Second, 8*time.Second),
			WithHooks(Hooks{BidPlaced: func(string, string, int64) { bids <- time.Now() }}))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done, exited := make(chan error, 1), make(chan struct{})
		go func() {
			done <- m.Run(rctx)
			close(exited)
		}()
		// Also after a t.Fatal, or synctest panics with "deadlock".
		t.Cleanup(func() {
			cancel()
			<-exited
		})
		var until time.Time
		for k := 1; k <= 6; k++ {
			// A rival opens an auction; n joins it, its bid closes it (max-bids
			// 2) and the rival's larger offer wins.
			if _, err := s.Bid(ctx, "a", "rival", 1000); err != nil {
				t.Fatalf("rival's bid %d: %v", k, err)
			}
			at := <-bids
			if at.Before(until) {
				t.Fatalf("bid %d at %v, before the backoff of the previous loss ended at %v", k, at.Format(time.StampMilli), until.Format(time.StampMilli))
			}
			synctest.Wait()
			r, err := s.Get(ctx, "a")
			if err != nil || r.Owner != "rival" {
				t.Fatalf("round %d: %+v, %v; want won by the rival", k, r, err)
			}
			m.mu.Lock()
			b := m.backoff["a"]
			m.mu.Unlock()
			if b.attempts != k || !b.until.After(at) {
				t.Fatalf("after loss %d: backoff %+v", k, b)
			}
			until = b.until
			if err := s.Release(ctx, lease.Ref{Item: "a", Holder: "rival", Fence: r.Fence}); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}
