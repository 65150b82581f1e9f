package redis

import (
	"context"
	"errors"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultMaxBatch is the default bound of [WithPipelining]: the most
// reservoir reads one pipeline carries.
const DefaultMaxBatch = 64

// reader sends the ZRANGE reads of concurrent Payloads calls to Redis,
// coalescing them into pipelines (opportunistic auto-pipelining):
//
//   - When no read is in flight, a call goes out at once on the caller's
//     goroutine, as a plain command with the caller's context: a lone
//     request never waits for company.
//   - A call that arrives while a read is in flight is queued. When the
//     read in flight returns, one runner goroutine sends everything queued
//     at that moment (at most maxBatch commands) as one pipeline,
//     hands each caller its reply, and repeats until the queue is empty.
//     So under load there is one round trip, one write and one read
//     syscall per batch instead of per request, on both sides.
//   - A queued caller whose context ends leaves the queue and returns the
//     context's error at once; one whose command is already on the wire
//     returns at once too, and its reply is dropped.
//   - close fails every queued call with errClosed, cancels the pipeline in
//     flight (go-redis gives up at its next deadline check) and waits for the
//     runner to exit.
//
// Nothing is cached: every call's reply is read from Redis after the call
// was made.
type reader struct {
	rdb      goredis.UniversalClient
	maxBatch int

	stop   context.Context // context of runner pipelines; cancelled by close
	cancel context.CancelFunc

	mu     sync.Mutex
	queue  []*readCall
	busy   bool // a read is in flight (direct or a runner's pipeline)
	closed bool
	wg     sync.WaitGroup // the runner goroutine
}

// readCall is one queued ZRANGE.
type readCall struct {
	key     string
	members []string
	err     error
	queued  bool          // guarded by reader.mu: still in reader.queue
	done    chan struct{} // capacity 1: the runner never blocks on it
}

var callPool = sync.Pool{New: func() any { return &readCall{done: make(chan struct{}, 1)} }}

// errClosed is what calls failed by close return; Store wraps it as
// piece.ErrClosed.
var errClosed = errors.New("reader closed")

func newReader(rdb goredis.UniversalClient, maxBatch int) *reader {
	ctx, cancel := context.WithCancel(context.Background())
	return &reader{rdb: rdb, maxBatch: maxBatch, stop: ctx, cancel: cancel}
}

// zrange returns ZRANGE key 0 -1.
func (r *reader) zrange(ctx context.Context, key string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errClosed
	}
	if r.maxBatch <= 1 { // batching off
		r.mu.Unlock()
		return r.rdb.ZRange(ctx, key, 0, -1).Result()
	}
	if !r.busy { // idle: go out at once, on this goroutine
		r.busy = true
		r.mu.Unlock()
		m, err := r.rdb.ZRange(ctx, key, 0, -1).Result()
		r.release()
		return m, err
	}
	c := callPool.Get().(*readCall)
	c.key, c.queued = key, true
	r.queue = append(r.queue, c)
	r.mu.Unlock()

	select {
	case <-c.done:
		m, err := c.members, c.err
		*c = readCall{done: c.done}
		callPool.Put(c)
		return m, err
	case <-ctx.Done():
		r.mu.Lock()
		if c.queued { // still waiting: leave the queue; nobody else holds c
			r.remove(c)
			r.mu.Unlock()
			*c = readCall{done: c.done}
			callPool.Put(c)
			return nil, ctx.Err()
		}
		r.mu.Unlock()
		// On the wire (or just answered): the runner (or close) sends on
		// c.done, whose buffer takes it; c is left to the collector.
		return nil, ctx.Err()
	}
}

// remove deletes c from the queue. r.mu is held.
func (r *reader) remove(c *readCall) {
	for i, q := range r.queue {
		if q == c {
			copy(r.queue[i:], r.queue[i+1:])
			r.queue[len(r.queue)-1] = nil
			r.queue = r.queue[:len(r.queue)-1]
			break
		}
	}
	c.queued = false
}

// release ends a direct read: it hands the queue that built up meanwhile to
// a runner, or marks the reader idle.
func (r *reader) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 || r.closed {
		r.busy = false
		return
	}
	batch := r.take(nil)
	r.wg.Add(1)
	go r.run(batch)
}

// take moves up to maxBatch queued calls into batch. r.mu is held.
func (r *reader) take(batch []*readCall) []*readCall {
	n := min(len(r.queue), r.maxBatch)
	batch = append(batch[:0], r.queue[:n]...)
	for _, c := range batch {
		c.queued = false
	}
	rest := copy(r.queue, r.queue[n:])
	clear(r.queue[rest:])
	r.queue = r.queue[:rest]
	return batch
}

// run sends batches until the queue is empty, then marks the reader idle.
func (r *reader) run(batch []*readCall) {
	defer r.wg.Done()
	cmds := make([]*goredis.StringSliceCmd, 0, r.maxBatch)
	for {
		pipe := r.rdb.Pipeline()
		cmds = cmds[:0]
		for _, c := range batch {
			cmds = append(cmds, pipe.ZRange(r.stop, c.key, 0, -1))
		}
		_, _ = pipe.Exec(r.stop) // errors are per command
		for i, c := range batch {
			c.members, c.err = cmds[i].Result()
			if c.err != nil && r.stop.Err() != nil {
				c.err = errClosed
			}
			c.done <- struct{}{}
		}
		clear(cmds)
		r.mu.Lock()
		if len(r.queue) == 0 || r.closed {
			r.busy = false
			r.mu.Unlock()
			return
		}
		batch = r.take(batch)
		r.mu.Unlock()
	}
}

// close fails the queued calls, stops the runner and waits for it. It is
// idempotent.
func (r *reader) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, c := range r.queue {
		c.queued = false
		c.err = errClosed
		c.done <- struct{}{}
	}
	clear(r.queue)
	r.queue = nil
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
