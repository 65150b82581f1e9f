package leasetest

import (
	"sort"
	"sync"
	"time"
)

// Clock is the suite's clock. A fake Clock ([NewClock]) moves only when
// the suite calls Advance, and fires the timers that become due; a real one
// ([RealClock]) reads time.Now and sleeps in Advance. It implements
// [lease.TimerClock].
type Clock struct {
	real bool

	mu     sync.Mutex
	now    time.Time
	timers []*timer
	next   int
}

type timer struct {
	at   time.Time
	id   int
	f    func()
	done bool
}

// NewClock returns a fake clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// RealClock returns a clock that reads time.Now and sleeps in Advance, for
// backends whose expiry runs on a server's clock.
func RealClock() *Clock { return &Clock{real: true} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	if c.real {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves a fake clock by d and runs, each in its own goroutine, the
// timers that fall due; a real clock sleeps for d.
func (c *Clock) Advance(d time.Duration) {
	if c.real {
		time.Sleep(d)
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].id < due[j].id })
	for _, t := range due {
		go t.f()
	}
}

// AfterFunc calls f in its own goroutine once the clock has moved d on.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if c.real {
		return time.AfterFunc(d, f).Stop
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	t := &timer{at: c.now.Add(d), id: c.next, f: f}
	if d <= 0 {
		t.done = true
		go f()
		return func() bool { return false }
	}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.done {
			return false
		}
		t.done = true
		for i, x := range c.timers {
			if x == t {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		return true
	}
}
