package logsample

import (
	"sync"
	"time"
)

// Sampler decides which events of each kind are logged. The zero value is
// not usable; make one with [New]. It is safe for concurrent use.
type Sampler struct {
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*kind
}

type kind struct {
	last time.Time // when an event of the kind was last let through
	held uint64    // events held back since then
}

// New returns a Sampler that lets through one event of each kind per
// interval every (every <= 0 lets every event through).
func New(every time.Duration) *Sampler {
	return &Sampler{every: every, now: time.Now, kinds: make(map[string]*kind)}
}

// Allow reports whether an event of kind k is to be logged now and, when
// it is, how many events of that kind were held back since the last one
// logged.
func (s *Sampler) Allow(k string) (ok bool, held uint64) {
	if s.every <= 0 {
		return true, 0
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.kinds[k]
	if e == nil {
		e = &kind{}
		s.kinds[k] = e
	} else if now.Sub(e.last) < s.every {
		e.held++
		return false, 0
	}
	held, e.held, e.last = e.held, 0, now
	return true, held
}
