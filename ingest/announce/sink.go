package announce

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Class says which limit an announce of a publisher falls under; a [Sink]
// tells the [Receiver] (see [WithSink]).
type Class uint8

const (
	// ClassNew is a publisher whose signed head has never verified: its
	// announces count against the rate of their source address
	// ([WithSourceRate]), since anyone can invent such publishers.
	ClassNew Class = iota
	// ClassVerified is a publisher whose head has verified and that is
	// idle: its announces count against its own rate
	// ([WithPublisherRate]), whatever address they come from, so that
	// publishers behind one address (a NAT, a provider with several peer
	// IDs) do not share a budget.
	ClassVerified
	// ClassPending is a publisher with a walk queued or running: an
	// announce only marks it to be walked again, which costs nothing
	// more, so no limit counts it.
	ClassPending
)

func (c Class) String() string {
	switch c {
	case ClassNew:
		return "new"
	case ClassVerified:
		return "verified"
	case ClassPending:
		return "pending"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// A Sink takes the announces of a [Receiver] as they arrive, instead of a
// queue read with [Receiver.Next] (see [WithSink]). An ingester is one:
// it can say what an announce costs before any limit counts it, and
// refuse one while the HTTP request is still open, so that the sender
// hears of it.
type Sink interface {
	// Class says which limit an announce of publisher falls under. It is
	// asked before the announce is limited, so it must be cheap and must
	// not block.
	Class(publisher peer.ID) Class
	// Take takes an announce that passed the policy, the limits and
	// de-duplication. It must not block. An error that wraps [ErrBusy]
	// (a [*Refusal]) refuses it for now, and the HTTP sender is answered
	// 429 or 503 with a Retry-After; any other error is answered 500.
	Take(a Announce) error
}

// ErrBusy is wrapped by the errors with which a [Sink] refuses an
// announce for now: a later one may be taken. [*Refusal] wraps it.
var ErrBusy = errors.New("announce: busy")

// Refusal is the error with which a [Sink] refuses an announce for now.
// It wraps [ErrBusy].
type Refusal struct {
	// Reason names the problem, for the HTTP answer's body and the log.
	Reason string
	// RetryAfter is when a new announce may be taken; at least a second
	// is sent.
	RetryAfter time.Duration
	// Source is true when the sender's own share is used up (answered
	// 429 Too Many Requests), false when the Sink is full for everyone
	// (503 Service Unavailable).
	Source bool
}

func (e *Refusal) Error() string { return "announce refused: " + e.Reason }
func (e *Refusal) Unwrap() error { return ErrBusy }

// status is the HTTP status that answers e.
func (e *Refusal) status() int {
	if e.Source {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// WithSink hands every accepted announce to s as it arrives instead of
// queueing it for [Receiver.Next] (which then only waits for Close), and
// asks s for each announce's [Class] before limiting it:
//
//   - [ClassPending]: no limit; the announce goes to s.
//   - [ClassVerified]: limited per publisher ([WithPublisherRate]).
//   - [ClassNew]: limited per source address ([WithSourceRate]).
//
// An HTTP body is then read (it is at most [WithBodyLimit] bytes) before
// the limits, since the publisher is in it. Sources exempted with
// [WithSourceRateExempt] are limited by neither rate.
func WithSink(s Sink) Option {
	return func(c *receiverConfig) error {
		if s == nil {
			return fmt.Errorf("%w: nil sink", ErrInvalidOption)
		}
		c.sink = s
		return nil
	}
}

// WithPublisherRate limits the HTTP announces of each publisher of
// [ClassVerified] (which needs [WithSink]) to perSecond a second on
// average and burst at once; beyond, the handler answers 429 Too Many
// Requests with a Retry-After. The table of publishers is bounded as
// that of sources ([WithMaxSources]). perSecond 0 removes the limit (the
// default); otherwise burst must be 1 or more.
func WithPublisherRate(perSecond float64, burst int) Option {
	return func(c *receiverConfig) error {
		if perSecond < 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) || (perSecond > 0 && burst < 1) {
			return fmt.Errorf("%w: publisher rate %v a second, burst %d", ErrInvalidOption, perSecond, burst)
		}
		c.publisherRate, c.publisherBurst = perSecond, burst
		return nil
	}
}
