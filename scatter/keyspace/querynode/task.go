package querynode

import (
	"context"
	"errors"
	"sync"

	"github.com/indexkit/indexkit/scatter/keyspace"
)

// task is a copy or a drop: started through the API, run by Node.Run.
type task struct {
	started bool // guarded by Node.mu

	stop   context.Context // done when the task is to stop
	cancel context.CancelFunc
	fn     func(ctx context.Context, t *task) error
	onEnd  func() // Config.OnTaskEnd, or nil

	mu sync.Mutex
	t  keyspace.Task
}

func newTask(epoch uint64, fn func(ctx context.Context, t *task) error, onEnd func()) *task {
	stop, cancel := context.WithCancel(context.Background())
	return &task{stop: stop, cancel: cancel, fn: fn, onEnd: onEnd, t: keyspace.Task{Epoch: epoch}}
}

func (t *task) run(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	unhook := context.AfterFunc(t.stop, cancel)
	defer unhook()
	err := t.fn(ctx, t)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil && t.stop.Err() != nil && errors.Is(err, context.Canceled) {
		err = errors.New("stopped: the layout moved on or the node closed")
	}
	t.mu.Lock()
	t.t.Done = true
	if err != nil {
		t.t.Error = err.Error()
	}
	t.mu.Unlock()
	t.cancel()
	if t.onEnd != nil {
		t.onEnd()
	}
}

func (t *task) add(keys int64) {
	t.mu.Lock()
	t.t.Keys += keys
	t.mu.Unlock()
}

func (t *task) addRanges(n int64) {
	t.mu.Lock()
	t.t.Ranges += n
	t.mu.Unlock()
}

func (t *task) snapshot() keyspace.Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.t
}

func (t *task) epoch() uint64 { return t.t.Epoch } // immutable
