package assigner

// The announce intake: the Sink the receiver hands announces to, and the
// view of each publisher's announce class it reads.

import (
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/announce"
)

// intakeSize is how many announces wait for the service's loop; beyond,
// the receiver answers 503 with a Retry-After.
const intakeSize = announce.DefaultQueueSize

// intakeRetryAfter is the Retry-After of an announce refused because the
// intake is full: the loop takes thousands a second.
const intakeRetryAfter = time.Second

// intakeItem is an announce on its way to the loop. reserved: it holds a
// place in the verification queue (its publisher was unknown when it was
// taken), which the loop keeps or gives back.
type intakeItem struct {
	a        announce.Announce
	reserved bool
}

// classes is the view of the publishers' announce classes that the
// receiver reads from its handlers while the loop owns the state: the
// loop writes a publisher's class whenever it may have changed. A
// publisher not in it is [announce.ClassNew]. It holds the publishers the
// state knows and those being verified, as the state does.
type classes struct {
	mu sync.RWMutex
	m  map[peer.ID]announce.Class
}

func (c *classes) get(p peer.ID) announce.Class {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[p] // ClassNew when absent
}

func (c *classes) set(p peer.ID, cl announce.Class) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl == announce.ClassNew {
		delete(c.m, p)
		return
	}
	c.m[p] = cl
}

// reclass writes p's class to the view, from what the loop knows: an
// assign or handoff request in flight or a verification running or
// waiting is [announce.ClassPending], a publisher the state knows
// [announce.ClassVerified]. It runs on the loop.
func (s *Service) reclass(p peer.ID) {
	cl := announce.ClassNew
	switch {
	case s.requests[p] > 0 || s.verify.has(p):
		cl = announce.ClassPending
	case s.state.Known(p):
		cl = announce.ClassVerified
	}
	s.classes.set(p, cl)
}

// sink is the service's [announce.Sink]: the receiver asks it for an
// announce's class before limiting it, and hands it the announces that
// pass, while their HTTP requests are open.
type sink struct{ s *Service }

// Class reads the loop's view: a publisher with a request in flight or
// being verified is pending (its announces are coalesced), one the state
// knows is verified (limited per publisher), any other new (limited per
// source).
func (k sink) Class(p peer.ID) announce.Class { return k.s.classes.get(p) }

// Take hands a to the loop without waiting. It refuses it (503 with a
// Retry-After) when the loop has intakeSize announces waiting, or when
// a's publisher is new and the verification queue is full.
func (k sink) Take(a announce.Announce) error {
	s := k.s
	select {
	case <-s.stopped:
		return fmt.Errorf("assigner: %w", announce.ErrClosed)
	default:
	}
	in := intakeItem{a: a}
	if s.classes.get(a.Publisher) == announce.ClassNew {
		if !s.verify.reserve() {
			return &announce.Refusal{
				Reason:     fmt.Sprintf("%d announces of unknown publishers are waiting for their signed heads to be checked", s.verify.queueSize),
				RetryAfter: s.verify.timeout,
			}
		}
		in.reserved = true
	}
	select {
	case s.announces <- in:
	default:
		if in.reserved {
			s.verify.release()
		}
		return &announce.Refusal{
			Reason:     fmt.Sprintf("%d announces are waiting for the assigner", intakeSize),
			RetryAfter: intakeRetryAfter,
		}
	}
	if h := s.opts.hooks.Announce; h != nil {
		h(a)
	}
	return nil
}
