package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Lease is the holder's handle on a lease it won at auction. It keeps the
// holder's own view of the lease's validity and closes Done the moment the
// holder must stop acting as owner.
//
// # The safety margin
//
// Each successful renewal (and Acquire) reads the holder's clock at t0,
// before sending the request. The store extends the lease to TTL after it
// processes the request, which is after t0; so, with clocks that run at the
// same rate, the store's expiry is never earlier than t0+TTL by the
// holder's clock. The Lease counts itself lost at
//
//	t0 + TTL − SafetyMargin
//
// and the store grants the item to anyone else only by an auction
// evaluated after the expiry on its own clock. The margin (default TTL/10,
// see [WithHolderSafetyMargin])
// absorbs clock-rate drift and the time between the holder checking Done
// and its last write landing. A fence-aware resource (see [CheckFence])
// protects against the rest: pauses longer than the margin.
//
// Done is also closed when a renewal or update is refused (ErrNotHeld,
// ErrStaleFence, or ErrNotFound when the store lost the row) and after
// Release. Once closed it stays closed, even if a
// later renewal would have succeeded.
type Lease struct {
	s      Store
	clk    Clock
	hooks  HolderHooks
	margin time.Duration // 0: a tenth of each renewal's TTL

	mu       sync.Mutex
	ref      Ref
	deadline time.Time // by clk
	stop     func() bool
	done     chan struct{}
	err      error
}

// Acquire takes up a lease that ref's holder won at auction (from a
// [BidResult] or [AuctionResult], or seen as Owner in a [Row]). It renews
// the lease at once, to anchor the local deadline to a request it timed,
// and fails with ErrNotHeld or ErrStaleFence if the lease is not current.
// Acquire grants nothing: auctions are the only way to obtain a lease.
//
// The lease's TTL comes from the store, with each renewal; opts set the
// holder's clock, hooks and safety margin, and nothing else. An invalid
// option fails Acquire with an error wrapping [ErrInvalid] before the
// store is called.
func Acquire(ctx context.Context, s Store, ref Ref, opts ...HolderOption) (*Lease, error) {
	c := holderConfig{clock: SystemClock{}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	l := &Lease{s: s, clk: c.clock, hooks: c.hooks, margin: c.margin, ref: ref, done: make(chan struct{})}
	if err := l.Renew(ctx); err != nil {
		l.lose(err)
		return nil, err
	}
	return l, nil
}

// HolderOption configures the [Lease] that [Acquire] returns.
type HolderOption func(*holderConfig) error

type holderConfig struct {
	clock  Clock
	hooks  HolderHooks
	margin time.Duration // 0: a tenth of the TTL of each renewal
}

// WithHolderClock sets the holder's clock, by which the lease's local
// deadline is kept (default [SystemClock]). With a [TimerClock], Done
// closes at the deadline without being asked.
func WithHolderClock(clk Clock) HolderOption {
	return func(c *holderConfig) error {
		if clk == nil {
			return fmt.Errorf("lease: nil holder clock: %w", ErrInvalidOption)
		}
		c.clock = clk
		return nil
	}
}

// HolderHooks receive the events of a [Lease], on the holder's side
// ([WithHolderHooks]); a store never calls them. Every field may be nil;
// they are called synchronously and must not block.
type HolderHooks struct {
	// LeaseRenewed is called after each successful renewal.
	LeaseRenewed func(ref Ref)
	// LeaseLost runs before the lease's Done channel closes, also when the
	// holder released the lease: then reason wraps [ErrReleased].
	LeaseLost func(ref Ref, reason error)
}

// WithHolderHooks sets the hooks the lease calls.
func WithHolderHooks(h HolderHooks) HolderOption {
	return func(c *holderConfig) error { c.hooks = h; return nil }
}

// WithHolderSafetyMargin sets how long before its expiry by the holder's
// clock the lease counts itself lost (default: a tenth of the TTL the
// store reports with each renewal; 0 also means the default). A margin
// at or above the store's TTL makes every renewal fail with
// [ErrInvalid].
func WithHolderSafetyMargin(d time.Duration) HolderOption {
	return func(c *holderConfig) error {
		if d < 0 {
			return fmt.Errorf("lease: safety margin %v: %w", d, ErrInvalidOption)
		}
		c.margin = d
		return nil
	}
}

// Ref returns the grant the lease is for.
func (l *Lease) Ref() Ref { return l.ref }

// Done is closed when the holder must consider the lease lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns why Done was closed, or nil while it is open. The error
// wraps ErrNotHeld (expired locally, refused, released) or ErrStaleFence;
// after Release (or Drain) it also wraps ErrReleased.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// ValidFor returns how long the lease stays valid by the holder's clock,
// closing Done if that time has passed. It is ≤ 0 once the lease is lost.
func (l *Lease) ValidFor() time.Duration {
	l.mu.Lock()
	lost := l.err != nil
	left := l.deadline.Sub(l.clk.Now())
	l.mu.Unlock()
	if lost {
		return 0
	}
	if left <= 0 {
		l.lose(fmt.Errorf("lease: %s expired locally: %w", l.ref.Item, ErrNotHeld))
		return 0
	}
	return left
}

// Renew extends the lease. A refusal closes Done and returns the error; a
// failure of the call itself (a context, a network) leaves the lease as it
// was, to lapse at its deadline unless a later Renew succeeds.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	t0 := l.clk.Now()
	rs, err := l.s.Renew(ctx, l.ref)
	if err != nil {
		l.ValidFor()
		return fmt.Errorf("lease: renew %s: %w", l.ref.Item, err)
	}
	if len(rs) != 1 {
		return fmt.Errorf("lease: renew %s: %d results: %w", l.ref.Item, len(rs), ErrInvalid)
	}
	return l.apply(t0, rs[0])
}

// RenewAll renews leases held on s with one batched [Store.Renew] call,
// as [Lease.Renew] does for one: a refused renewal closes that lease's
// Done, a failed call leaves every lease to lapse at its deadline. Leases
// already lost are skipped. The error joins the refusals, or is the
// call's failure.
func RenewAll(ctx context.Context, s Store, ls ...*Lease) error {
	var (
		live []*Lease
		t0s  []time.Time
		refs []Ref
	)
	for _, l := range ls {
		if l.Err() != nil {
			continue
		}
		live = append(live, l)
		t0s = append(t0s, l.clk.Now())
		refs = append(refs, l.ref)
	}
	if len(live) == 0 {
		return nil
	}
	rs, err := s.Renew(ctx, refs...)
	if err != nil {
		for _, l := range live {
			l.ValidFor()
		}
		return fmt.Errorf("lease: renew %d leases: %w", len(refs), err)
	}
	if len(rs) != len(refs) {
		return fmt.Errorf("lease: renew %d leases: %d results: %w", len(refs), len(rs), ErrInvalid)
	}
	var errs []error
	for i, l := range live {
		if err := l.apply(t0s[i], rs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// apply takes in the outcome of a renewal sent at t0 by the holder's clock.
func (l *Lease) apply(t0 time.Time, r Renewal) error {
	if err := r.Err; err != nil {
		l.lose(err)
		return err
	}
	margin := l.margin
	if margin == 0 {
		margin = r.TTL / 10
	}
	if r.TTL <= margin {
		err := fmt.Errorf("lease: TTL %v within safety margin %v: %w", r.TTL, margin, ErrInvalid)
		l.lose(err)
		return err
	}
	d := t0.Add(r.TTL - margin)
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	if !d.After(l.clk.Now()) {
		l.mu.Unlock()
		err := fmt.Errorf("lease: %s expired locally during renewal: %w", l.ref.Item, ErrNotHeld)
		l.lose(err)
		return err
	}
	l.deadline = d
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
	if tc, ok := l.clk.(TimerClock); ok {
		l.stop = tc.AfterFunc(d.Sub(l.clk.Now()), func() { l.ValidFor() })
	}
	l.mu.Unlock()
	if h := l.hooks.LeaseRenewed; h != nil {
		h(l.ref)
	}
	return nil
}

// Update applies an owner's mutation through the store. It fails without
// calling the store once the lease is lost.
func (l *Lease) Update(ctx context.Context, m Mutation) (Row, error) {
	if l.ValidFor() <= 0 {
		return Row{}, l.Err()
	}
	r, err := l.s.Update(ctx, l.ref, m)
	if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrStaleFence) {
		l.lose(err)
	}
	return r, err
}

// Release gives the lease up and closes Done.
func (l *Lease) Release(ctx context.Context) error {
	err := l.s.Release(ctx, l.ref)
	if err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrStaleFence) {
		l.lose(fmt.Errorf("lease: %s: %w", l.ref.Item, ErrReleased))
	}
	return err
}

// Drain marks the item Draining, calls finish to let in-flight work end,
// and releases the lease. finish gets a context that is cancelled when the
// lease is lost or ctx is done. The lease is released even if finish fails;
// the errors are joined.
func (l *Lease) Drain(ctx context.Context, finish func(context.Context) error) error {
	if _, err := l.Update(ctx, Mutation{Draining: true}); err != nil {
		return fmt.Errorf("lease: drain %s: %w", l.ref.Item, err)
	}
	var ferr error
	if finish != nil {
		fctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(ctx, cancel)
		go func() {
			select {
			case <-l.done:
				cancel()
			case <-fctx.Done():
			}
		}()
		ferr = finish(fctx)
		stop()
		cancel()
	}
	return errors.Join(ferr, l.Release(ctx))
}

func (l *Lease) lose(reason error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = reason
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
	l.mu.Unlock()
	// The hook runs before Done closes, so whoever wakes on Done sees
	// everything the hook recorded; only the first lose gets here.
	if h := l.hooks.LeaseLost; h != nil {
		h(l.ref, reason)
	}
	close(l.done)
}
