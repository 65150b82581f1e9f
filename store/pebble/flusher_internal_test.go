package pebble

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every Flush of a store without a WAL returns only after a memtable flush
// that started after it was called (one already running may have begun
// before the caller's last write), flushes never overlap, and callers
// that arrive during a flush share the next one.
func TestFlusherCoalesces(t *testing.T) {
	var starts, ends, running atomic.Int64
	f := &flusher{flush: func() error {
		if running.Add(1) != 1 {
			t.Error("two flushes at once")
		}
		starts.Add(1)
		time.Sleep(time.Millisecond)
		ends.Add(1)
		running.Add(-1)
		return nil
	}}
	const callers, rounds = 16, 50
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range rounds {
				before := starts.Load()
				if err := f.do(); err != nil {
					t.Error(err)
					return
				}
				if got := ends.Load(); got < before+1 {
					t.Errorf("Flush returned after %d flushes had ended, when %d had started before it was called", got, before)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d Flush calls, %d memtable flushes", callers*rounds, starts.Load())
}
