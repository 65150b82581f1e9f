package netlimit

import (
	"container/list"
	"fmt"
	"math"
	"sync"
	"time"
)

// DefaultMaxKeys is how many keys a [Rate] remembers: about 100 bytes
// each.
const DefaultMaxKeys = 10_000

// RateOption configures a [Rate].
type RateOption func(*rateConfig) error

type rateConfig struct {
	maxKeys int
}

// WithMaxKeys sets how many keys the Rate remembers; beyond it the least
// recently seen one is forgotten (it gets a full bucket again). Default
// [DefaultMaxKeys].
func WithMaxKeys(n int) RateOption {
	return func(c *rateConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: max keys %d", ErrInvalidOption, n)
		}
		c.maxKeys = n
		return nil
	}
}

// Rate is a token bucket per key: each key may take perSecond tokens a
// second on average, and burst at once. See the package documentation.
type Rate struct {
	perSecond, burst float64
	maxKeys          int

	mu    sync.Mutex
	order *list.List // of *bucket, the most recently seen at the front
	keys  map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time // when tokens was computed
}

// NewRate returns a Rate of perSecond tokens a second (more than 0) and
// burst tokens at most (1 or more) per key.
func NewRate(perSecond float64, burst int, opts ...RateOption) (*Rate, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return nil, fmt.Errorf("%w: rate %v per second", ErrInvalidOption, perSecond)
	}
	if burst < 1 {
		return nil, fmt.Errorf("%w: burst %d", ErrInvalidOption, burst)
	}
	cfg := rateConfig{maxKeys: DefaultMaxKeys}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	return &Rate{
		perSecond: perSecond, burst: float64(burst), maxKeys: cfg.maxKeys,
		order: list.New(), keys: make(map[string]*list.Element),
	}, nil
}

// Allow takes a token of key and reports whether there was one. If not,
// retryAfter is how long until the next token: the Retry-After of an HTTP
// 429.
func (r *Rate) Allow(key string) (ok bool, retryAfter time.Duration) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var b *bucket
	if e, found := r.keys[key]; found {
		r.order.MoveToFront(e)
		b = e.Value.(*bucket)
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(r.burst, b.tokens+dt*r.perSecond)
		}
		b.last = now
	} else {
		if r.order.Len() >= r.maxKeys {
			old := r.order.Back()
			r.order.Remove(old)
			delete(r.keys, old.Value.(*bucket).key)
		}
		b = &bucket{key: key, tokens: r.burst, last: now}
		r.keys[key] = r.order.PushFront(b)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	// Rounded up: at retryAfter the token is there.
	wait := time.Duration(math.Ceil((1 - b.tokens) / r.perSecond * float64(time.Second)))
	return false, max(wait, time.Nanosecond)
}

// Len returns how many keys the Rate remembers now.
func (r *Rate) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}
