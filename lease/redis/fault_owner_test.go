package redis_test

// The owner process of the fault tests: the test binary, re-executed by a
// fault test with the arguments ownerArg and a JSON ownerConfig, runs
// runOwner instead of the test. See fault_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/lease"
	leaseredis "github.com/indexkit/indexkit/lease/redis"
)

// ownerArg, as the first argument after the test flags, makes a fault
// test run as an owner process; the second argument is its ownerConfig.
const ownerArg = "fault-owner"

// ownerConfig tells an owner process what to do.
type ownerConfig struct {
	Node    string        // the node's name
	Addr    string        // the lease store's Redis (or a proxy in front of it)
	RegAddr string        // the Redis that holds the fenced register
	Prefix  string        // key prefix of the catalog and the register
	Item    string        // the one item it competes for
	Free    int64         // the free memory it bids
	TTL     time.Duration // the store's TTL
	Window  time.Duration // the store's auction window
	Margin  time.Duration // the lease's safety margin
	Life    time.Duration // the process exits after this, whatever happens
	// Zombie: after losing a lease, try one register write and one row
	// update with the lost grant's Ref, as a holder that ignored Done
	// would, and report how the store and the register answered.
	Zombie bool
}

// The owner's pacing: writes and bid polls every step, renewals every
// TTL/4, each request bounded by TTL/2.
const ownerStep = 50 * time.Millisecond

// runOwnerIfChild runs the owner process and reports true when this test
// binary was started as one (by startOwner); a fault test then returns at
// once.
func runOwnerIfChild(t *testing.T) bool {
	if flag.NArg() != 2 || flag.Arg(0) != ownerArg {
		return false
	}
	var cfg ownerConfig
	if err := json.Unmarshal([]byte(flag.Arg(1)), &cfg); err != nil {
		t.Fatalf("owner config %q: %v", flag.Arg(1), err)
	}
	if err := runOwner(cfg); err != nil {
		t.Fatal(err)
	}
	return true
}

// registerScript is a fenced register, the resource outside the catalog
// that owners write to: it applies lease.CheckFence's rule (refuse a fence
// older than the highest accepted) and logs each accepted write as
// "fence node seq server-µs". KEYS: the highest fence, the log. ARGV:
// fence, node, seq. Returns {1, fence} when accepted, {0, highest} when
// refused.
var registerScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = redis.call('GET', KEYS[1]) or '0'
if tonumber(ARGV[1]) < tonumber(last) then return {0, last} end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. string.format('%.0f', now))
return {1, ARGV[1]}
`)

func registerKeys(prefix string) []string {
	return []string{prefix + "register", prefix + "register:log"}
}

// registerWrite writes (fence, node, seq) to the fenced register and
// reports whether it was accepted, and the register's highest fence.
func registerWrite(ctx context.Context, c goredis.Scripter, prefix string, fence lease.Fence, node string, seq int) (bool, lease.Fence, error) {
	v, err := registerScript.Run(ctx, c, registerKeys(prefix), strconv.FormatUint(uint64(fence), 10), node, seq).Slice()
	if err != nil {
		return false, 0, fmt.Errorf("register write: %w", err)
	}
	if len(v) != 2 {
		return false, 0, fmt.Errorf("register write: reply %v", v)
	}
	ok, _ := v[0].(int64)
	s, _ := v[1].(string)
	last, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("register write: fence %q: %w", s, err)
	}
	return ok == 1, lease.Fence(last), nil
}

// owner is the state of an owner process.
type owner struct {
	cfg   ownerConfig
	log   *slog.Logger
	lc    *goredis.Client // lease store
	rc    *goredis.Client // register
	s     *leaseredis.Store
	seq   int
	beats time.Time
	// lostAt is when the current lease's LeaseLost hook ran (µs).
	lostAt atomic.Int64
}

// runOwner competes for cfg.Item until cfg.Life has passed: it heartbeats
// and bids until it wins, acquires the lease, then renews it and writes
// (register and row) until the lease is lost, and starts over. Every step
// is a key=value line on standard output, which the parent test reads.
func runOwner(cfg ownerConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Life)
	defer cancel()
	opt := func(addr string) *goredis.Options {
		return &goredis.Options{
			Addr:                  addr,
			MaxRetries:            -1, // one attempt per operation: faults show as errors
			DialTimeout:           cfg.TTL / 2,
			ReadTimeout:           cfg.TTL / 2,
			WriteTimeout:          cfg.TTL / 2,
			ContextTimeoutEnabled: true,
		}
	}
	o := &owner{
		cfg: cfg,
		log: slog.New(slog.NewTextHandler(os.Stdout, nil)).With("node", cfg.Node),
		lc:  goredis.NewClient(opt(cfg.Addr)),
		rc:  goredis.NewClient(opt(cfg.RegAddr)),
	}
	defer o.lc.Close()
	defer o.rc.Close()
	s, err := leaseredis.New(o.lc, cfg.Prefix, lease.WithTTL(cfg.TTL), lease.WithAuctionWindow(cfg.Window))
	if err != nil {
		return err
	}
	defer s.Close()
	o.s = s
	o.log.Info("ready", "pid", os.Getpid())
	for ctx.Err() == nil {
		if l := o.win(ctx); l != nil {
			o.hold(ctx, l)
		}
	}
	return nil
}

// op is the context of one request.
func (o *owner) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.cfg.TTL/2)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// win bids until it wins the item and acquires the lease; nil when ctx is
// done first.
func (o *owner) win(ctx context.Context) *lease.Lease {
	for ctx.Err() == nil {
		if time.Since(o.beats) >= o.cfg.TTL/4 {
			octx, cancel := o.op(ctx)
			if err := o.s.Heartbeat(octx, o.cfg.Node); err != nil {
				o.log.Info("error", "op", "heartbeat", "err", err)
			} else {
				o.beats = time.Now()
			}
			cancel()
		}
		if ref, ok := o.tryWin(ctx); ok {
			if l := o.acquire(ctx, ref); l != nil {
				return l
			}
		}
		sleepCtx(ctx, ownerStep)
	}
	return nil
}

// tryWin bids once and, if the bid opened or joined an auction, evaluates
// it until it closes. It returns the Ref of a grant to this node.
func (o *owner) tryWin(ctx context.Context) (lease.Ref, bool) {
	octx, cancel := o.op(ctx)
	res, err := o.s.Bid(octx, o.cfg.Item, o.cfg.Node, o.cfg.Free)
	cancel()
	switch {
	case err == nil && res.Result != nil:
		return o.mine(ctx, *res.Result)
	case err == nil:
		for ctx.Err() == nil {
			sleepCtx(ctx, ownerStep)
			octx, cancel := o.op(ctx)
			r, err := o.s.Evaluate(octx, o.cfg.Item)
			cancel()
			if err != nil {
				o.log.Info("error", "op", "evaluate", "err", err)
				return lease.Ref{}, false
			}
			if r.Outcome != lease.NotDue {
				return o.mine(ctx, r)
			}
		}
	case errors.Is(err, lease.ErrLeased):
		// Possibly to this node, by a grant whose answer was lost.
		return o.fromRow(ctx)
	case errors.Is(err, lease.ErrBidPending), errors.Is(err, lease.ErrAuctionClosed):
		octx, cancel := o.op(ctx)
		r, err := o.s.Evaluate(octx, o.cfg.Item)
		cancel()
		if err == nil {
			return o.mine(ctx, r)
		}
	case errors.Is(err, lease.ErrNotFound):
		// The catalog lost the item (a restart without persistence);
		// wait for its administrator to put it back.
	default:
		o.log.Info("error", "op", "bid", "err", err)
	}
	return lease.Ref{}, false
}

// mine returns the grant of r if it went to this node. When another
// evaluator closed the auction (NoAuction), the row says who won.
func (o *owner) mine(ctx context.Context, r lease.AuctionResult) (lease.Ref, bool) {
	switch {
	case r.Outcome == lease.Granted && r.Grant.Holder == o.cfg.Node:
		return r.Grant.Ref, true
	case r.Outcome == lease.NoAuction:
		return o.fromRow(ctx)
	}
	return lease.Ref{}, false
}

func (o *owner) fromRow(ctx context.Context) (lease.Ref, bool) {
	octx, cancel := o.op(ctx)
	row, err := o.s.Get(octx, o.cfg.Item)
	cancel()
	if err != nil || row.Owner != o.cfg.Node {
		return lease.Ref{}, false
	}
	return lease.Ref{Item: row.ID, Holder: row.Owner, Fence: row.Fence}, true
}

// acquire takes up the lease of ref. The acquired line carries the
// grant's time on the server (its expiry less the TTL, read back from the
// row) and the lease's local deadline, rounded up.
func (o *owner) acquire(ctx context.Context, ref lease.Ref) *lease.Lease {
	octx, cancel := o.op(ctx)
	defer cancel()
	row, err := o.s.Get(octx, ref.Item)
	if err != nil || row.Owner != ref.Holder || row.Fence != ref.Fence {
		o.log.Info("error", "op", "acquire", "fence", uint64(ref.Fence), "err", fmt.Errorf("row %+v: %v", row, err))
		return nil
	}
	// The row's expiry is the grant's unless a renewal came between:
	// granted_us is never earlier than the grant.
	granted := row.Expiry.Add(-o.cfg.TTL)
	o.lostAt.Store(0)
	hooks := lease.HolderHooks{LeaseLost: func(lease.Ref, error) { o.lostAt.Store(time.Now().UnixMicro()) }}
	l, err := lease.Acquire(octx, o.s, ref, lease.WithHolderSafetyMargin(o.cfg.Margin),
		lease.WithHolderHooks(hooks))
	if err != nil {
		o.log.Info("error", "op", "acquire", "fence", uint64(ref.Fence), "err", err)
		return nil
	}
	o.log.Info("acquired", "fence", uint64(ref.Fence), "granted_us", granted.UnixMicro(),
		"deadline_us", deadline(l))
	return l
}

// deadline is the lease's local deadline in µs, never earlier than the
// real one: ValidFor is read before the clock.
func deadline(l *lease.Lease) int64 {
	v := l.ValidFor()
	return time.Now().Add(v).UnixMicro() + 1
}

// hold renews l every TTL/4 and, every step while it is valid, writes the
// register and the row, until l is lost or ctx is done.
func (o *owner) hold(ctx context.Context, l *lease.Lease) {
	ref := l.Ref()
	f := uint64(ref.Fence)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.cfg.TTL / 4)
		defer t.Stop()
		for {
			select {
			case <-l.Done():
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			octx, cancel := o.op(ctx)
			err := l.Renew(octx)
			cancel()
			switch {
			case err == nil:
				o.log.Info("renewed", "fence", f, "deadline_us", deadline(l))
			case l.Err() == nil:
				o.log.Info("renew-failed", "fence", f, "err", err)
			}
		}
	}()
	defer wg.Wait()
	t := time.NewTicker(ownerStep)
	defer t.Stop()
	for {
		select {
		case <-l.Done():
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// at is read before the check: the lease was valid at at.
		at := time.Now().UnixMicro()
		if l.ValidFor() <= 0 {
			break
		}
		o.seq++
		octx, cancel := o.op(ctx)
		ok, last, err := registerWrite(octx, o.rc, o.cfg.Prefix, ref.Fence, o.cfg.Node, o.seq)
		cancel()
		switch {
		case err != nil:
			o.log.Info("error", "op", "register", "fence", f, "seq", o.seq, "err", err)
		case ok:
			o.log.Info("wrote", "fence", f, "seq", o.seq, "at_us", at)
		default:
			o.log.Info("rejected", "fence", f, "seq", o.seq, "last", uint64(last))
		}
		commit := o.cfg.Node + "/" + strconv.Itoa(o.seq)
		octx, cancel = o.op(ctx)
		row, err := l.Update(octx, lease.Mutation{Commit: &commit})
		cancel()
		if err != nil {
			o.log.Info("update-failed", "fence", f, "seq", o.seq, "err", err)
		} else {
			o.log.Info("updated", "fence", f, "seq", o.seq, "version", row.Version, "at_us", at)
		}
	}
	wg.Wait()
	// lostAt is set: the LeaseLost hook runs before Done closes.
	o.log.Info("lost", "fence", f, "reason", l.Err(), "at_us", o.lostAt.Load())
	if o.cfg.Zombie {
		o.zombie(ctx, ref)
	}
}

// zombie writes with a lost grant's Ref, as a holder that ignored Done.
func (o *owner) zombie(ctx context.Context, ref lease.Ref) {
	f := uint64(ref.Fence)
	o.seq++
	octx, cancel := o.op(ctx)
	ok, last, err := registerWrite(octx, o.rc, o.cfg.Prefix, ref.Fence, o.cfg.Node, o.seq)
	cancel()
	o.log.Info("zombie-register", "fence", f, "seq", o.seq, "accepted", ok, "last", uint64(last), "err", err)
	commit := o.cfg.Node + "/zombie"
	octx, cancel = o.op(ctx)
	_, err = o.s.Update(octx, ref, lease.Mutation{Commit: &commit})
	cancel()
	o.log.Info("zombie-update", "fence", f, "stale", errors.Is(err, lease.ErrStaleFence),
		"notheld", errors.Is(err, lease.ErrNotHeld), "err", err)
}
