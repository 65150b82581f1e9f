package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/internal/testbed/redistest"
)

// waitQueued waits (bounded) until n calls are queued.
func waitQueued(t *testing.T, r *reader, n int) {
	t.Helper()
	for range 2000 {
		r.mu.Lock()
		got := len(r.queue)
		r.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("queue never reached %d calls", n)
}

type reply struct {
	members []string
	err     error
}

// TestReaderQueueCancelClose drives the dispatcher through its states with
// a read held "in flight": calls queue behind it; a cancelled queued call
// leaves the queue and returns its context's error; when the read in
// flight ends, the rest go out as one pipeline and get their own replies;
// Close fails queued calls with errClosed and later calls too.
func TestReaderQueueCancelClose(t *testing.T) {
	c := redistest.Client(t, redistest.Addr())
	key := "indexkit-test:piece:reader:" + t.Name()
	t.Cleanup(func() { _ = c.Del(context.Background(), key).Err() })
	if err := c.ZAdd(t.Context(), key, goredis.Z{Member: "m1"}, goredis.Z{Member: "m2"}).Err(); err != nil {
		t.Fatal(err)
	}
	r := newReader(c, 64)
	defer r.close()

	r.mu.Lock()
	r.busy = true // a read in flight: new calls queue
	r.mu.Unlock()

	keys := []string{key, key + ":absent", key}
	ctxs := make([]context.Context, len(keys))
	cancels := make([]context.CancelFunc, len(keys))
	out := make([]chan reply, len(keys))
	for i, k := range keys {
		ctxs[i], cancels[i] = context.WithCancel(t.Context())
		defer cancels[i]()
		out[i] = make(chan reply, 1)
		go func() {
			m, err := r.zrange(ctxs[i], k)
			out[i] <- reply{m, err}
		}()
		waitQueued(t, r, i+1)
	}

	cancels[2]()
	if got := <-out[2]; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("cancelled queued call: %v, %v; want context.Canceled", got.members, got.err)
	}
	waitQueued(t, r, 2)

	r.release() // the read in flight ends: the queue goes out as one pipeline
	if got := <-out[0]; got.err != nil || len(got.members) != 2 {
		t.Errorf("queued call 0: %q, %v; want [m1 m2]", got.members, got.err)
	}
	if got := <-out[1]; got.err != nil || len(got.members) != 0 {
		t.Errorf("queued call 1: %q, %v; want empty", got.members, got.err)
	}
	for range 2000 { // the runner marks the reader idle
		r.mu.Lock()
		busy := r.busy
		r.mu.Unlock()
		if !busy {
			break
		}
		time.Sleep(time.Millisecond)
	}

	// Idle: a lone call goes out at once.
	if m, err := r.zrange(t.Context(), key); err != nil || len(m) != 2 {
		t.Errorf("lone call: %q, %v", m, err)
	}

	r.mu.Lock()
	r.busy = true
	r.mu.Unlock()
	closing := make(chan reply, 2)
	for range 2 {
		go func() {
			m, err := r.zrange(t.Context(), key)
			closing <- reply{m, err}
		}()
	}
	waitQueued(t, r, 2)
	r.close()
	for range 2 {
		if got := <-closing; !errors.Is(got.err, errClosed) {
			t.Errorf("queued call at close: %q, %v; want errClosed", got.members, got.err)
		}
	}
	if _, err := r.zrange(t.Context(), key); !errors.Is(err, errClosed) {
		t.Errorf("call after close: %v, want errClosed", err)
	}
	r.close() // idempotent
}
