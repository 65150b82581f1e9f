package ingest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/chaingen"
	"github.com/indexkit/indexkit/store/memory"
)

// WithRequestRate spaces the requests to a publisher: 9 requests (head and
// 8 ads) at 4/s with a burst of 1 take 2 seconds.
func TestRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chain := generate(t, chaingen.Config{Seed: 500, Ads: 8})
		st := memory.New()
		defer st.Close()
		srcs := newSources()
		srcs.set(chain.Publisher, chain.Source())
		ing := newIngester(t, st, newDS(), srcs, ingest.WithRequestRate(4, 1))
		start := time.Now()
		if err := ing.Sync(context.Background(), chain.Publisher, testAddrs, cid.Undef); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("9 requests at 4/s took %v, want 2s", got)
		}
		equalModel(t, chain.Model(), st)
	})
}

// A failed walk is retried after a backoff that doubles with each failure.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chain := generate(t, chaingen.Config{Seed: 501, Ads: 3})
		st := memory.New()
		defer st.Close()
		o := &overlay{base: chain.Source(), hang: chain.Head()}
		srcs := newSources()
		srcs.set(chain.Publisher, o)
		ing := newIngester(t, st, newDS(), srcs, ingest.WithRequestTimeout(time.Second),
			ingest.WithBackoff(10*time.Second, time.Minute))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- ing.Run(ctx) }()
		if err := ing.Announce(chain.Publisher, testAddrs, chain.Head()); err != nil {
			t.Fatal(err)
		}
		// Attempts at 0s, 11s (1s timeout + 10s), 32s (+1s + 20s).
		for _, want := range []int{1, 2, 3} {
			time.Sleep(time.Second + 100*time.Millisecond)
			synctest.Wait()
			s, _ := ing.Status(chain.Publisher)
			if s.Failures != want {
				t.Fatalf("after attempt %d: %d failures", want, s.Failures)
			}
			time.Sleep(s.RetryAt.Sub(time.Now()))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
