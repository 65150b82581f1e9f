package scatter

import (
	"fmt"
	"sync"
	"time"
)

// BreakerState is the state of a backend's circuit breaker.
type BreakerState int32

const (
	// BreakerClosed lets every request through and counts failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen lets no request through until its backoff has passed.
	BreakerOpen
	// BreakerHalfOpen lets a limited number of probe requests through;
	// enough consecutive successes close it, one failure opens it again.
	BreakerHalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int32(s))
}

// Breaker defaults; the threshold and window are indexstar's (10 failures
// within its 1 s counter window).
const (
	DefaultBreakerFailures   = 10
	DefaultBreakerWindow     = time.Second
	DefaultBreakerBackoffMin = time.Second
	DefaultBreakerBackoffMax = time.Minute
	DefaultBreakerProbes     = 1
	DefaultBreakerSuccesses  = 5
)

// BreakerConfig configures the circuit breaker a [Gather] keeps per backend
// (see [WithBreaker]). A zero field takes its default.
//
// A backend's breaker opens when Failures of its requests fail within
// Window, whatever succeeded in between (indexstar's rule, except that here
// running out of time is a failure). It stays open for BackoffMin, doubling
// each time it opens again without having closed, up to BackoffMax. Then it
// is half-open: at most Probes requests are in flight at once; Successes
// consecutive successes close it and one failure opens it again.
//
// A request counts as failed when the backend yields an error or runs out of
// the Gather's per-backend time; "not found" is a success. A request the
// caller abandoned (its context done, or iteration stopped early) counts as
// neither.
type BreakerConfig struct {
	Failures               int
	Window                 time.Duration
	BackoffMin, BackoffMax time.Duration
	Probes                 int
	Successes              int
	// Disabled turns the breakers off: every backend is always asked.
	Disabled bool
}

func (c BreakerConfig) withDefaults() (BreakerConfig, error) {
	if c.Failures < 0 || c.Window < 0 || c.BackoffMin < 0 || c.BackoffMax < 0 || c.Probes < 0 || c.Successes < 0 {
		return c, fmt.Errorf("%w: negative breaker setting in %+v", ErrInvalidOption, c)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Failures, DefaultBreakerFailures)
	defD(&c.Window, DefaultBreakerWindow)
	defD(&c.BackoffMin, DefaultBreakerBackoffMin)
	if c.BackoffMax == 0 {
		c.BackoffMax = max(DefaultBreakerBackoffMax, c.BackoffMin)
	}
	def(&c.Probes, DefaultBreakerProbes)
	def(&c.Successes, DefaultBreakerSuccesses)
	if c.BackoffMax < c.BackoffMin {
		return c, fmt.Errorf("%w: breaker backoff %v to %v", ErrInvalidOption, c.BackoffMin, c.BackoffMax)
	}
	return c, nil
}

// outcome is what a request allowed by a breaker came to.
type outcome uint8

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	// outcomeAbandoned: the caller gave up; says nothing about the backend.
	outcomeAbandoned
)

// ticket is a request let through by a breaker; its outcome is reported
// with done. Outcomes of tickets issued before the last state change are
// ignored, so a request sent while closed cannot re-open a breaker that
// has since half-opened.
type ticket struct {
	gen   uint64
	probe bool
}

// transition is a state change, reported to the hook after the lock is
// released.
type transition struct {
	from, to BreakerState
	changed  bool
}

// breaker is one backend's circuit breaker. It reads time.Now, which
// testing/synctest fakes.
type breaker struct {
	cfg BreakerConfig

	mu        sync.Mutex
	state     BreakerState
	gen       uint64
	fails     []time.Time // ring of the last cfg.Failures failure times
	nfail     int         // failures in the ring
	next      int         // ring slot of the next failure
	opens     int         // times opened since last closed
	openUntil time.Time
	inflight  int // probes in flight while half-open
	successes int // consecutive probe successes while half-open
}

func newBreaker(cfg BreakerConfig) *breaker {
	return &breaker{cfg: cfg, fails: make([]time.Time, cfg.Failures)}
}

// allow reports whether a request may be sent now.
func (b *breaker) allow(now time.Time) (ticket, bool, transition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var tr transition
	switch b.state {
	case BreakerClosed:
		return ticket{gen: b.gen}, true, tr
	case BreakerOpen:
		if now.Before(b.openUntil) {
			return ticket{}, false, tr
		}
		tr = b.setLocked(BreakerHalfOpen)
	}
	if b.inflight >= b.cfg.Probes {
		return ticket{}, false, tr
	}
	b.inflight++
	return ticket{gen: b.gen, probe: true}, true, tr
}

// done reports the outcome of a request allowed by allow.
func (b *breaker) done(t ticket, o outcome, now time.Time) transition {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen != b.gen {
		return transition{}
	}
	if t.probe {
		b.inflight--
		switch o {
		case outcomeSuccess:
			b.successes++
			if b.successes >= b.cfg.Successes {
				b.opens = 0
				return b.setLocked(BreakerClosed)
			}
		case outcomeFailure:
			return b.openLocked(now)
		}
		return transition{}
	}
	if o != outcomeFailure {
		return transition{}
	}
	b.fails[b.next] = now
	b.next = (b.next + 1) % len(b.fails)
	if b.nfail < len(b.fails) {
		b.nfail++
	}
	// With the ring full, b.next is the oldest of the last cfg.Failures.
	if b.nfail == len(b.fails) && now.Sub(b.fails[b.next]) <= b.cfg.Window {
		return b.openLocked(now)
	}
	return transition{}
}

func (b *breaker) openLocked(now time.Time) transition {
	backoff := b.cfg.BackoffMin
	for i := 0; i < b.opens && backoff < b.cfg.BackoffMax; i++ {
		backoff *= 2
	}
	backoff = min(backoff, b.cfg.BackoffMax)
	b.opens++
	b.openUntil = now.Add(backoff)
	return b.setLocked(BreakerOpen)
}

// setLocked changes state, starting a new generation with fresh counters.
func (b *breaker) setLocked(s BreakerState) transition {
	tr := transition{from: b.state, to: s, changed: b.state != s}
	b.state = s
	b.gen++
	b.nfail, b.next = 0, 0
	b.inflight, b.successes = 0, 0
	return tr
}

func (b *breaker) current() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
