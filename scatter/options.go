package scatter

import (
	"fmt"
	"slices"
	"time"
)

// DefaultBackendTimeout is how long a [Gather] waits for each backend
// (indexstar's ResultMaxWait).
const DefaultBackendTimeout = 5 * time.Second

// GatherOption configures a [Gather]; see [NewGather].
type GatherOption func(*gatherConfig) error

type gatherConfig struct {
	timeout      time.Duration
	breaker      BreakerConfig
	cacheEntries int
	cacheTTL     time.Duration
	cacheNegTTL  time.Duration
	ring         *Ring
	hedge        time.Duration
	names        []string
	hooks        GatherHooks
}

// WithBackendTimeout sets how long each backend may take to answer one
// request (default [DefaultBackendTimeout]); the caller's context bounds it
// too. A backend that runs out of time counts as failed, for its breaker as
// well.
func WithBackendTimeout(d time.Duration) GatherOption {
	return func(c *gatherConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: backend timeout %v must be positive", ErrInvalidOption, d)
		}
		c.timeout = d
		return nil
	}
}

// WithBreaker configures the per-backend circuit breakers (default: a
// zero [BreakerConfig], that is every default).
func WithBreaker(cfg BreakerConfig) GatherOption {
	return func(c *gatherConfig) error {
		cfg, err := cfg.withDefaults()
		c.breaker = cfg
		return err
	}
}

// WithCache puts a result cache in front of Find: up to entries answers,
// least recently used evicted first, each kept for ttl, or for negativeTTL
// when it is "not found" (0: not cached). Only complete answers are cached
// — every backend asked answered and the caller read to the end — never a
// partial one or an error. The default is no cache.
func WithCache(entries int, ttl, negativeTTL time.Duration) GatherOption {
	return func(c *gatherConfig) error {
		if entries < 1 || ttl <= 0 || negativeTTL < 0 {
			return fmt.Errorf("%w: cache of %d entries, ttl %v, negative ttl %v", ErrInvalidOption, entries, ttl, negativeTTL)
		}
		c.cacheEntries, c.cacheTTL, c.cacheNegTTL = entries, ttl, negativeTTL
		return nil
	}
}

// WithRing makes Find ask only the backends that own the multihash on r
// instead of all of them; backend i of the Gather is backend i of the ring,
// so r.Len() must equal the number of backends. The ring's names name the
// backends unless [WithBackendNames] is given. Providers and Provider still
// ask every backend.
//
// The owners of a key are replicas: each holds the whole answer for it. So
// Find asks them all at once and returns the first complete answer (results
// or "not found") of any of them, cancelling the others, instead of merging
// every backend's; an owner that fails (an error, a 5xx such as a query
// node's 503 while it catches up, its timeout, its breaker open) does not
// count, and only when every owner fails does the answer end with a
// [*find.PartialError]. [Gather.FindBatch] splits a batch by owner.
//
// Use a ring only over backends whose data is placed by the same ring
// (package scatter/keyspace places it; see [Ring]): over a pool sharded by
// publisher, answers would look complete and miss what other backends hold.
func WithRing(r *Ring) GatherOption {
	return func(c *gatherConfig) error {
		if r == nil {
			return fmt.Errorf("%w: nil ring", ErrInvalidOption)
		}
		c.ring = r
		return nil
	}
}

// WithHedge makes Find with a ring ([WithRing]) ask a key's owners one
// after the other instead of all at once: the primary first, then the next
// owner when d has passed without a complete answer, or at once when every
// owner asked so far has failed. A lookup then usually touches one backend
// instead of R, and the cancelled requests of losing owners (which cost
// an HTTP/1.1 connection each) are rare; d is best a little above the
// owners' usual answer time, so that only slow answers are hedged.
// Without a ring it changes nothing. d must be positive; the default is
// no hedge (every owner asked at once).
func WithHedge(d time.Duration) GatherOption {
	return func(c *gatherConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: hedge delay %v must be positive", ErrInvalidOption, d)
		}
		c.hedge = d
		return nil
	}
}

// WithBackendNames names the backends, one name per backend, in errors and
// [GatherStats]. By default a backend is named by its String method when it
// has one (a [fmt.Stringer]), else by its URL method (as a [find.Client]
// has), else by its position, "#0", "#1"...
func WithBackendNames(names ...string) GatherOption {
	return func(c *gatherConfig) error {
		c.names = slices.Clone(names)
		return nil
	}
}

// WithHooks installs metric hooks; see [GatherHooks].
func WithHooks(h GatherHooks) GatherOption {
	return func(c *gatherConfig) error { c.hooks = h; return nil }
}
