package logsample

import (
	"sync"
	"testing"
	"time"
)

func TestAllowOnePerInterval(t *testing.T) {
	s := New(time.Second)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	if ok, held := s.Allow("a"); !ok || held != 0 {
		t.Fatalf("first event: Allow = %v, %d; want true, 0", ok, held)
	}
	for range 5 {
		if ok, _ := s.Allow("a"); ok {
			t.Fatal("a second event within the interval was let through")
		}
	}
	if ok, held := s.Allow("b"); !ok || held != 0 {
		t.Fatalf("another kind: Allow = %v, %d; want true, 0 (kinds are apart)", ok, held)
	}
	now = now.Add(time.Second)
	if ok, held := s.Allow("a"); !ok || held != 5 {
		t.Fatalf("after the interval: Allow = %v, %d; want true, 5 held back", ok, held)
	}
	if ok, _ := s.Allow("a"); ok {
		t.Fatal("the interval did not start again")
	}
}

func TestAllowNoInterval(t *testing.T) {
	s := New(0)
	for range 3 {
		if ok, held := s.Allow("a"); !ok || held != 0 {
			t.Fatalf("Allow = %v, %d with no interval; want every event", ok, held)
		}
	}
}

func TestAllowConcurrent(t *testing.T) {
	s := New(time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	let := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := s.Allow("a"); ok {
					mu.Lock()
					let++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if let != 1 {
		t.Fatalf("%d of 800 concurrent events let through in one interval, want 1", let)
	}
}
