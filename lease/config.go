package lease

import (
	"fmt"
	"time"
)

// Clock tells the time. Backends whose clock runs in the process (memory)
// read it for every expiry and window; a backend with a server-side clock
// (Redis) ignores it. A [Lease] reads it ([WithHolderClock]) to decide, by
// the holder's own clock, when it has lost its lease.
type Clock interface {
	Now() time.Time
}

// TimerClock is a Clock that can also call a function after a delay. A
// [Lease] uses it to close Done at its local deadline without being asked;
// with a plain Clock it notices only when one of its methods is called.
type TimerClock interface {
	Clock
	// AfterFunc calls f in its own goroutine after d; stop cancels the call
	// and reports whether it did so before f was started.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Hooks receive a store's events, its auctions and bids, for metrics
// ([WithHooks]). Every field may be nil. Hooks are called synchronously,
// outside the store's locks, and must not block. A [Lease]'s own events
// are [HolderHooks].
type Hooks struct {
	AuctionStarted        func(item string, round uint64)
	AuctionWon            func(r AuctionResult)
	AuctionNoWinner       func(r AuctionResult)
	AuctionShortCircuited func(r AuctionResult)
	AuctionTimedOut       func(r AuctionResult)
	// ItemStarved is called when an auction without a winner brings an
	// item's Unleased count to StarveAfter or beyond.
	ItemStarved func(item string, unleased int)

	BidPlaced func(item, node string, freeMemory int64)
	// BidRejected gets the sentinel that says why: ErrBidPending,
	// ErrBidTooLow, ErrLeased or ErrAuctionClosed.
	BidRejected func(item, node string, reason error)
}

// Config holds the settings shared by every backend. Build it with
// [NewConfig]; backends take the same Options. A [Lease] does not read it:
// [Acquire] takes [HolderOption]s.
type Config struct {
	TTL time.Duration // lease time to live (default 30s)
	// AuctionWindow is the hard backstop: an auction closes at most this long
	// after its first bid (default 60s).
	AuctionWindow time.Duration
	// PendingGrace: a pending-bid marker expires AuctionWindow+PendingGrace
	// after the bid, even if its auction is never evaluated (default 5s).
	PendingGrace time.Duration
	// MaxBids is the static short-circuit threshold; 0 disables it.
	MaxBids int
	// DynamicMaxBids makes the number of live nodes the threshold (when at
	// least one is live); LivenessWindow says how recent a heartbeat must be
	// (default 30s).
	DynamicMaxBids bool
	LivenessWindow time.Duration
	// LiveBiddersOnly makes an evaluation skip bidders that are not live
	// and take the next-best bid.
	LiveBiddersOnly bool
	// MinBidFactor scales a reported size into the item's minimum bid
	// (default 1).
	MinBidFactor float64
	// StarveAfter is the Unleased count from which an item is reported
	// starved (default 5).
	StarveAfter int
	// LossGuard makes a store that can lose its data without notice (a
	// Redis server without durable writes) hold every grant for one TTL
	// after it finds its data gone, so that every holder from before the
	// loss has given its lease up (Done closed) before the item can be
	// granted elsewhere. Off by default; stores that cannot lose
	// acknowledged writes ignore it. See lease/redis.
	LossGuard bool
	// OmitRowExpiry lets a store that reports lapses ([LapseReporter])
	// leave Row.Expiry zero on leased rows, so that a renewal need not
	// write it: lease/etcd then renews by keeping the grant's etcd lease
	// alive and writes nothing, one raft write fewer per lease and
	// renewal. Grant.Expiry and Renewal.Expiry are reported as before.
	// Stores whose rows' expiry costs nothing (memory, Redis) ignore it;
	// [RowExpiryReporter] tells which rows carry it. Off by default.
	OmitRowExpiry bool
	Clock         Clock
	Hooks         Hooks
}

// Option sets one setting of the [Config] that [NewConfig] builds. NewConfig
// applies the options in order, fails with the first error one returns,
// and validates the result: every setting is checked, with an error
// wrapping [ErrInvalidOption] (which matches [ErrInvalid] too).
type Option func(*config) error

// config is what the options write: the Config that NewConfig returns
// once it is validated.
type config struct{ Config }

// WithTTL sets the lease time to live.
func WithTTL(d time.Duration) Option { return func(c *config) error { c.TTL = d; return nil } }

// WithAuctionWindow sets the auction window, the backstop.
func WithAuctionWindow(d time.Duration) Option {
	return func(c *config) error { c.AuctionWindow = d; return nil }
}

// WithPendingGrace sets how long past the window a pending-bid marker lasts.
func WithPendingGrace(d time.Duration) Option {
	return func(c *config) error { c.PendingGrace = d; return nil }
}

// WithMaxBids sets the static short-circuit threshold (0: none).
func WithMaxBids(n int) Option { return func(c *config) error { c.MaxBids = n; return nil } }

// WithDynamicMaxBids takes the threshold from the count of nodes that
// heartbeated within liveness.
func WithDynamicMaxBids(liveness time.Duration) Option {
	return func(c *config) error { c.DynamicMaxBids, c.LivenessWindow = true, liveness; return nil }
}

// WithLiveBiddersOnly makes evaluations skip bidders that are not live.
func WithLiveBiddersOnly() Option {
	return func(c *config) error { c.LiveBiddersOnly = true; return nil }
}

// WithMinBidFactor sets the factor from reported size to minimum bid.
func WithMinBidFactor(f float64) Option {
	return func(c *config) error { c.MinBidFactor = f; return nil }
}

// WithStarveAfter sets the Unleased count that marks an item starved.
func WithStarveAfter(n int) Option { return func(c *config) error { c.StarveAfter = n; return nil } }

// WithLossGuard turns [Config.LossGuard] on.
func WithLossGuard() Option { return func(c *config) error { c.LossGuard = true; return nil } }

// WithoutRowExpiry turns [Config.OmitRowExpiry] on.
func WithoutRowExpiry() Option { return func(c *config) error { c.OmitRowExpiry = true; return nil } }

// WithClock sets the clock (default [SystemClock]).
func WithClock(clk Clock) Option { return func(c *config) error { c.Clock = clk; return nil } }

// WithHooks sets the hooks.
func WithHooks(h Hooks) Option { return func(c *config) error { c.Hooks = h; return nil } }

// NewConfig applies opts to the defaults and validates the result.
func NewConfig(opts ...Option) (Config, error) {
	cc := config{Config{
		TTL:            30 * time.Second,
		AuctionWindow:  60 * time.Second,
		PendingGrace:   5 * time.Second,
		LivenessWindow: 30 * time.Second,
		MinBidFactor:   1,
		StarveAfter:    5,
		Clock:          SystemClock{},
	}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cc); err != nil {
			return cc.Config, err
		}
	}
	c := cc.Config
	switch {
	case c.TTL <= 0:
		return c, fmt.Errorf("lease: TTL %v: %w", c.TTL, ErrInvalidOption)
	case c.AuctionWindow <= 0:
		return c, fmt.Errorf("lease: auction window %v: %w", c.AuctionWindow, ErrInvalidOption)
	case c.PendingGrace < 0:
		return c, fmt.Errorf("lease: pending grace %v: %w", c.PendingGrace, ErrInvalidOption)
	case c.MaxBids < 0:
		return c, fmt.Errorf("lease: max bids %d: %w", c.MaxBids, ErrInvalidOption)
	case c.LivenessWindow <= 0:
		return c, fmt.Errorf("lease: liveness window %v: %w", c.LivenessWindow, ErrInvalidOption)
	case c.MinBidFactor < 0:
		return c, fmt.Errorf("lease: min bid factor %v: %w", c.MinBidFactor, ErrInvalidOption)
	case c.StarveAfter < 1:
		return c, fmt.Errorf("lease: starve after %d: %w", c.StarveAfter, ErrInvalidOption)
	case c.Clock == nil:
		return c, fmt.Errorf("lease: nil clock: %w", ErrInvalidOption)
	}
	return c, nil
}

// Threshold returns the short-circuit threshold of an item whose MaxBids
// override is override when live nodes are live: the override if positive,
// else the live count under DynamicMaxBids if positive, else MaxBids. Zero
// means no short circuit: only the window closes the auction.
func (c Config) Threshold(override, live int) int {
	if override > 0 {
		return override
	}
	if c.DynamicMaxBids && live > 0 {
		return live
	}
	return c.MaxBids
}

// MinBidFor returns the minimum bid for an item of size bytes.
func (c Config) MinBidFor(size int64) int64 {
	f := float64(size) * c.MinBidFactor
	m := int64(f)
	if float64(m) < f {
		m++
	}
	return m
}

// Evaluated calls the hooks that a closed auction fires, in this order:
// AuctionWon or AuctionNoWinner (then ItemStarved when r.Starved), then
// AuctionShortCircuited or AuctionTimedOut as r says. An auction that did
// not close (NotDue, NoAuction) fires none. Backends call it after the
// evaluation took effect, outside their locks.
func (h Hooks) Evaluated(r AuctionResult) {
	call := func(f func(AuctionResult)) {
		if f != nil {
			f(r)
		}
	}
	switch r.Outcome {
	case Granted:
		call(h.AuctionWon)
	case NoWinner:
		call(h.AuctionNoWinner)
		if r.Starved && h.ItemStarved != nil {
			h.ItemStarved(r.Item, r.Unleased)
		}
	default:
		return
	}
	if r.ShortCircuited {
		call(h.AuctionShortCircuited)
	}
	if r.TimedOut {
		call(h.AuctionTimedOut)
	}
}
