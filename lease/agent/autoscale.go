package agent

import (
	"sync"
	"time"
)

// Decision is an [Autoscaler]'s answer to one scan's [Signals].
type Decision int

const (
	// Steady: nothing to do.
	Steady Decision = iota
	// Grow: start a node; items that fit a node find no room.
	Grow
	// Shrink: stop this node; it has held nothing and served nothing
	// for a while, and nothing waits for room.
	Shrink
)

func (d Decision) String() string {
	switch d {
	case Steady:
		return "steady"
	case Grow:
		return "grow"
	case Shrink:
		return "shrink"
	}
	return "decision(?)"
}

// Autoscaler turns a node's [Signals] into a [Decision]. The manager
// calls Decide after every scan, from one goroutine, and passes each
// decision other than Steady to [Hooks].Scale and its log; acting on it
// (starting a machine, stopping this process, which drains it) is the
// program's job. Set one with [WithAutoscaler].
type Autoscaler interface {
	Decide(Signals) Decision
}

// AutoscalerFunc adapts a function to an [Autoscaler].
type AutoscalerFunc func(Signals) Decision

// Decide returns f(s).
func (f AutoscalerFunc) Decide(s Signals) Decision { return f(s) }

// Scaler is a ready-made [Autoscaler] with thresholds. The zero value
// uses the defaults; a Scaler must not be copied once in use, and serves
// one manager.
//
// It says Grow when the node's signals show at least GrowAt saturated
// items, and then waits Cooldown before saying it again, so that the
// node started has time to claim. It says Shrink when the node has been
// idle ([Signals.Idle]) for IdleAfter, no item is unclaimed but for those
// too large for any node of its size, and more than MinNodes nodes are
// live; then it waits Cooldown too. Several nodes may say Grow for one
// shortage: the program that acts should count one start per Cooldown,
// as the sim of examples/fleet does.
type Scaler struct {
	GrowAt    int           // saturated items that call for a node (default 1)
	IdleAfter time.Duration // idle time that ends a node (default 1 min)
	MinNodes  int           // no Shrink at or below this many live nodes (default 1)
	Cooldown  time.Duration // quiet time after a decision (default 30 s)

	mu   sync.Mutex
	last time.Time // the last decision other than Steady
}

// Decide implements [Autoscaler].
func (sc *Scaler) Decide(s Signals) Decision {
	growAt, idleAfter, minNodes, cooldown := sc.GrowAt, sc.IdleAfter, sc.MinNodes, sc.Cooldown
	if growAt <= 0 {
		growAt = 1
	}
	if idleAfter <= 0 {
		idleAfter = time.Minute
	}
	if minNodes <= 0 {
		minNodes = 1
	}
	if cooldown <= 0 {
		cooldown = 30 * time.Second
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.last.IsZero() && s.At.Sub(sc.last) < cooldown {
		return Steady
	}
	d := Steady
	switch {
	case s.Saturated >= growAt:
		d = Grow
	case s.Idle() >= idleAfter && s.Unclaimed == s.TooLarge && s.LiveNodes > minNodes:
		d = Shrink
	}
	if d != Steady {
		sc.last = s.At
	}
	return d
}
