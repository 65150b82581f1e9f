package pace

import (
	"runtime"
	"sync"
	"testing"
)

// Background lowers the thread of the goroutine that calls it, and no
// other goroutine runs on that thread afterwards: the thread ends with
// the goroutine.
func TestBackgroundLowersItsThreadOnly(t *testing.T) {
	base, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	if base >= 15 {
		t.Skipf("the test runs at nice %d already", base)
	}
	p := New(Config{Nice: 15})
	for range 20 {
		got := make(chan int, 1)
		go func() {
			p.Background()
			n, err := threadNice()
			if err != nil {
				t.Error(err)
			}
			got <- n
		}()
		if n := <-got; n != 15 {
			t.Fatalf("thread of a background goroutine at nice %d, want 15", n)
		}
	}
	if st := p.Stats(); st.Background != 20 {
		t.Errorf("stats %+v: want 20 background goroutines", st)
	}
	// Every thread the runtime hands out now, old or new, runs at the
	// process's nice value.
	var wg sync.WaitGroup
	var mu sync.Mutex
	lowered := 0
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if n, err := threadNice(); err != nil || n != base {
				mu.Lock()
				lowered++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if lowered > 0 {
		t.Errorf("%d goroutines ran on a thread not at the process's nice %d: a lowered thread went back to the runtime", lowered, base)
	}
}

func TestBackgroundOff(t *testing.T) {
	p := New(Config{Nice: -1})
	got := make(chan int, 1)
	base, _ := threadNice()
	go func() {
		p.Background()
		n, _ := threadNice()
		got <- n
	}()
	if n := <-got; n != base || p.Stats().Background != 0 {
		t.Errorf("nice %d with Config.Nice -1, want the process's %d and nothing lowered", n, base)
	}
}
