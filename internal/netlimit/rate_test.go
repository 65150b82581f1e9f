package netlimit_test

import (
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/indexkit/indexkit/internal/netlimit"
)

func TestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := netlimit.NewRate(2, 3) // a token every 500ms, 3 at once
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if ok, _ := r.Allow("a"); !ok {
				t.Fatalf("call %d of the burst refused", i)
			}
		}
		ok, wait := r.Allow("a")
		if ok || wait != 500*time.Millisecond {
			t.Fatalf("over the burst: %v, retry after %v; want refused, 500ms", ok, wait)
		}
		// Another key has its own bucket.
		if ok, _ := r.Allow("b"); !ok {
			t.Error("a second key refused")
		}
		// A refused call takes nothing: the token comes when it said.
		time.Sleep(400 * time.Millisecond)
		if ok, wait := r.Allow("a"); ok || wait != 100*time.Millisecond {
			t.Errorf("400ms later: %v, %v; want refused, 100ms", ok, wait)
		}
		time.Sleep(100 * time.Millisecond)
		if ok, _ := r.Allow("a"); !ok {
			t.Error("refused after Retry-After")
		}
		if ok, _ := r.Allow("a"); ok {
			t.Error("two tokens from 500ms at 2/s")
		}
		// A long pause refills the bucket up to the burst only.
		time.Sleep(time.Hour)
		n := 0
		for {
			if ok, _ := r.Allow("a"); !ok {
				break
			}
			n++
		}
		if n != 3 {
			t.Errorf("%d calls allowed after an hour, want the burst, 3", n)
		}
	})
}

func TestRateBoundedKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max = 1000
		r, err := netlimit.NewRate(1, 1, netlimit.WithMaxKeys(max))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100_000 {
			if ok, _ := r.Allow("10." + strconv.Itoa(i)); !ok {
				t.Fatalf("key %d refused on its first call", i)
			}
			if n := r.Len(); n > max {
				t.Fatalf("%d keys remembered, bound %d", n, max)
			}
		}
		if n := r.Len(); n != max {
			t.Errorf("%d keys remembered, want %d", n, max)
		}
		// The most recent keys are remembered, and still limited.
		if ok, _ := r.Allow("10.99999"); ok {
			t.Error("a recent key got a second token at once")
		}
	})
}

func TestNewRateOptions(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		burst int
		opts  []netlimit.RateOption
	}{
		{0, 1, nil}, {-1, 1, nil}, {1, 0, nil}, {1, 1, []netlimit.RateOption{netlimit.WithMaxKeys(0)}},
	} {
		if _, err := netlimit.NewRate(tc.rate, tc.burst, tc.opts...); !errors.Is(err, netlimit.ErrInvalidOption) {
			t.Errorf("NewRate(%v, %d): %v, want ErrInvalidOption", tc.rate, tc.burst, err)
		}
	}
}

func BenchmarkRateAllow(b *testing.B) {
	r, err := netlimit.NewRate(1e9, 1e9)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "10.0." + strconv.Itoa(i)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Allow(keys[i%len(keys)])
	}
}
