package memory

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/indexkit/indexkit/lease"
)

// WatchBuffer is how many changes a watcher that is not reading may fall
// behind before the store drops its queue and owes it a Reset: a slow
// consumer never blocks a write.
const WatchBuffer = 4096

var _ lease.Watcher = (*Store)(nil)

// watcher is one Watch call's queue.
type watcher struct {
	mu     sync.Mutex
	q      []lease.Change
	lost   bool // the queue overflowed: a Reset is owed
	closed bool // the store was closed
	wake   chan struct{}
}

func (w *watcher) push(c lease.Change) {
	w.mu.Lock()
	if len(w.q) >= WatchBuffer {
		w.q, w.lost = w.q[:0], true
	}
	w.q = append(w.q, c)
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// emit queues the row of it, as the write under way leaves it, for every
// watcher. The caller holds s.mu, so each item's changes are queued in
// the order they took effect.
func (s *Store) emit(it *item) {
	if len(s.watchers) == 0 {
		return
	}
	c := lease.Change{Row: s.rowOf(it)}
	for w := range s.watchers {
		w.push(c)
	}
}

// Watch implements [lease.Watcher]. It yields a Reset, then the row left
// by every Put, Bid, closing evaluation, Release and Update, in the order
// they took effect; renewals and lapses are not reported. A consumer that
// falls [WatchBuffer] changes behind loses its queue and gets a Reset
// before the changes that follow. Close ends every Watch with an error
// wrapping [lease.ErrClosed].
func (s *Store) Watch(ctx context.Context) iter.Seq2[lease.Change, error] {
	return func(yield func(lease.Change, error) bool) {
		if err := s.begin(ctx, "watch"); err != nil {
			if ctx.Err() == nil {
				yield(lease.Change{}, err)
			}
			return
		}
		w := &watcher{wake: make(chan struct{}, 1)}
		if s.watchers == nil {
			s.watchers = make(map[*watcher]struct{})
		}
		s.watchers[w] = struct{}{}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.watchers, w)
			s.mu.Unlock()
		}()
		if !yield(lease.Change{Reset: true}, nil) {
			return
		}
		var spare []lease.Change
		for {
			w.mu.Lock()
			q, lost, closed := w.q, w.lost, w.closed
			w.q, w.lost = spare[:0], false
			w.mu.Unlock()
			if lost && !yield(lease.Change{Reset: true}, nil) {
				return
			}
			for _, c := range q {
				if ctx.Err() != nil || !yield(c, nil) {
					return
				}
			}
			clear(q)
			spare = q
			if closed {
				yield(lease.Change{}, fmt.Errorf("lease/memory: watch: %w", lease.ErrClosed))
				return
			}
			if len(q) > 0 || lost {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
		}
	}
}

// closeWatchers ends every Watch; the caller holds s.mu.
func (s *Store) closeWatchers() {
	for w := range s.watchers {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.signal()
	}
}
