package etcd_test

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
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/indexkit/indexkit/lease"
	leaseetcd "github.com/indexkit/indexkit/lease/etcd"
)

// ownerArg, as the first argument after the test flags, makes a fault
// test run as an owner process; the second argument is its ownerConfig.
const ownerArg = "etcd-fault-owner"

// ownerConfig tells an owner process what to do.
type ownerConfig struct {
	Node      string        // the node's name
	Endpoints []string      // the etcd endpoints its client uses (members or their proxies)
	Prefix    string        // the store's key prefix
	Items     []string      // the items it competes for
	Free      int64         // its free memory with nothing held
	ItemSize  int64         // what each item held takes off its free memory
	TTL       time.Duration // the store's TTL
	Window    time.Duration // the store's auction window
	Grace     time.Duration // the store's pending grace
	Margin    time.Duration // the lease's safety margin
	Life      time.Duration // the process exits after this, whatever happens
	Register  string        // base URL of the fenced register
	// Zombie: after losing a lease, wait until the register has accepted
	// a newer fence for the item, then write once more with the lost
	// fence and renew the lost Ref at the store, as a holder that ignored
	// Done would, and report how both answered.
	Zombie bool
}

// ownerStep paces bid polls and register writes.
const ownerStep = 100 * time.Millisecond

// runOwnerIfChild runs the owner process and reports true when this test
// binary was started as one (by startOwner); the fault test then returns
// at once.
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

// owner is the state of an owner process.
type owner struct {
	cfg  ownerConfig
	log  *slog.Logger
	s    *leaseetcd.Store
	hc   *http.Client
	seq  atomic.Int64
	held atomic.Int64 // items held now, for the free memory bid
	wg   sync.WaitGroup
}

// runOwner competes for every item of cfg, one goroutine per item, until
// cfg.Life has passed: it bids until it wins the item, acquires the lease,
// then renews it every TTL/4 and writes the fenced register every step
// while the lease is valid by its own clock, until the lease is lost (Done
// closes), and starts over. Every step is a key=value line on standard
// output, which the parent test reads.
func runOwner(cfg ownerConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Life)
	defer cancel()
	// gRPC's default reconnect backoff grows from 1 s by 1.6 times per
	// attempt: after the whole cluster has been down for a few seconds, a
	// client may wait seconds more once it is back. Capped at 500 ms.
	reconnect := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
		MinConnectTimeout: time.Second,
	})
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: time.Second,
		DialOptions: []grpc.DialOption{reconnect},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	s, err := leaseetcd.New(cli, cfg.Prefix, lease.WithTTL(cfg.TTL),
		lease.WithAuctionWindow(cfg.Window), lease.WithPendingGrace(cfg.Grace))
	if err != nil {
		return err
	}
	defer s.Close()
	o := &owner{
		cfg: cfg,
		log: slog.New(slog.NewTextHandler(os.Stdout, nil)).With("node", cfg.Node),
		s:   s,
		hc:  &http.Client{Timeout: cfg.TTL / 2},
	}
	defer o.hc.CloseIdleConnections()
	o.log.Info("ready", "pid", os.Getpid())
	for _, id := range cfg.Items {
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			for ctx.Err() == nil {
				if l := o.win(ctx, id); l != nil {
					o.hold(ctx, l)
				}
			}
		}()
	}
	o.wg.Wait()
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

// win bids until it wins item id and acquires the lease; nil when ctx is
// done first.
func (o *owner) win(ctx context.Context, id string) *lease.Lease {
	for ctx.Err() == nil {
		if ref, granted, ok := o.tryWin(ctx, id); ok {
			if l := o.acquire(ctx, ref, granted); l != nil {
				return l
			}
		}
		sleepCtx(ctx, ownerStep)
	}
	return nil
}

// tryWin bids once and, if the bid opened or joined an auction, evaluates
// it until it closes. It returns the Ref of a grant to this node and the
// client time before the grant's etcd lease was asked for (its expiry
// less the TTL), which is after the previous grant's etcd lease lapsed.
func (o *owner) tryWin(ctx context.Context, id string) (lease.Ref, time.Time, bool) {
	free := o.cfg.Free - o.held.Load()*o.cfg.ItemSize
	octx, cancel := o.op(ctx)
	res, err := o.s.Bid(octx, id, o.cfg.Node, free)
	cancel()
	switch {
	case err == nil:
		o.log.Info("bid", "item", id, "round", res.Round, "free", free)
		if res.Result != nil {
			return o.mine(ctx, *res.Result)
		}
		for ctx.Err() == nil {
			sleepCtx(ctx, ownerStep)
			octx, cancel := o.op(ctx)
			r, err := o.s.Evaluate(octx, id)
			cancel()
			if err != nil {
				o.log.Info("error", "op", "evaluate", "item", id, "err", err)
				return lease.Ref{}, time.Time{}, false
			}
			if r.Outcome != lease.NotDue {
				return o.mine(ctx, r)
			}
		}
	case errors.Is(err, lease.ErrLeased):
		// Possibly to this node, by a grant whose answer was lost (a
		// leader killed after the commit).
		return o.fromRow(ctx, id)
	case errors.Is(err, lease.ErrAuctionClosed):
		// The bid closed an auction whose window had passed; whoever won
		// it, the row says.
		return o.fromRow(ctx, id)
	case errors.Is(err, lease.ErrBidPending):
		// This node bids in another auction (one at a time per node).
	default:
		o.log.Info("error", "op", "bid", "item", id, "err", err)
	}
	return lease.Ref{}, time.Time{}, false
}

// mine returns the grant of r if it went to this node. When another
// evaluator closed the auction (NoAuction), the row says who won.
func (o *owner) mine(ctx context.Context, r lease.AuctionResult) (lease.Ref, time.Time, bool) {
	switch {
	case r.Outcome == lease.Granted && r.Grant.Holder == o.cfg.Node:
		return r.Grant.Ref, r.Grant.Expiry.Add(-r.Grant.TTL), true
	case r.Outcome == lease.NoAuction:
		return o.fromRow(ctx, r.Item)
	}
	return lease.Ref{}, time.Time{}, false
}

// fromRow returns the live grant of id if it is this node's. Its grant
// time is read back from the row's expiry: never earlier than the grant
// (a renewal moves it later).
func (o *owner) fromRow(ctx context.Context, id string) (lease.Ref, time.Time, bool) {
	octx, cancel := o.op(ctx)
	row, err := o.s.Get(octx, id)
	cancel()
	if err != nil || row.Owner != o.cfg.Node || row.Expiry.IsZero() {
		return lease.Ref{}, time.Time{}, false
	}
	return lease.Ref{Item: row.ID, Holder: row.Owner, Fence: row.Fence}, row.Expiry.Add(-o.cfg.TTL), true
}

// acquire takes up the lease of ref. The acquired line carries the time
// of the grant (granted_us: the grant's etcd lease was asked for after
// it, and after every earlier grant of the item had lapsed in etcd) and
// the lease's local deadline, rounded up.
func (o *owner) acquire(ctx context.Context, ref lease.Ref, granted time.Time) *lease.Lease {
	octx, cancel := o.op(ctx)
	defer cancel()
	l, err := lease.Acquire(octx, o.s, ref, lease.WithHolderSafetyMargin(o.cfg.Margin))
	if err != nil {
		o.log.Info("error", "op", "acquire", "item", ref.Item, "fence", uint64(ref.Fence), "err", err)
		return nil
	}
	o.log.Info("acquired", "item", ref.Item, "fence", uint64(ref.Fence),
		"granted_us", granted.UnixMicro(), "deadline_us", deadline(l))
	return l
}

// deadline is the lease's local deadline in µs, never earlier than the
// real one: ValidFor is read before the clock.
func deadline(l *lease.Lease) int64 {
	v := l.ValidFor()
	return time.Now().Add(v).UnixMicro() + 1
}

// hold renews l every TTL/4 and, every step while it is valid by the
// holder's clock, writes the register, until l is lost (Done) or ctx is
// done.
func (o *owner) hold(ctx context.Context, l *lease.Lease) {
	ref := l.Ref()
	f := uint64(ref.Fence)
	o.held.Add(1)
	defer o.held.Add(-1)
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
				o.log.Info("renewed", "item", ref.Item, "fence", f, "deadline_us", deadline(l))
			case l.Err() == nil:
				o.log.Info("renew-failed", "item", ref.Item, "fence", f, "err", err)
			}
		}
	}()
	t := time.NewTicker(ownerStep)
	defer t.Stop()
	for {
		select {
		case <-l.Done():
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
		// at is read before the check: the lease was valid at at.
		at := time.Now().UnixMicro()
		if l.ValidFor() <= 0 {
			break
		}
		o.write(ctx, ref, at, false)
	}
	wg.Wait()
	o.log.Info("lost", "item", ref.Item, "fence", f, "reason", l.Err(), "at_us", time.Now().UnixMicro())
	if o.cfg.Zombie {
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			o.zombie(ctx, ref)
		}()
	}
}

// write sends one write with ref's fence to the register and reports how
// it went; at is when the writer last found its lease valid.
func (o *owner) write(ctx context.Context, ref lease.Ref, at int64, zombie bool) (accepted bool, last lease.Fence, err error) {
	seq := o.seq.Add(1)
	q := url.Values{
		"item": {ref.Item}, "fence": {strconv.FormatUint(uint64(ref.Fence), 10)},
		"node": {o.cfg.Node}, "seq": {strconv.FormatInt(seq, 10)}, "zombie": {strconv.FormatBool(zombie)},
	}
	var reply registerReply
	err = o.call(ctx, "/write?"+q.Encode(), &reply)
	if zombie {
		return reply.Accepted, reply.Last, err
	}
	f := uint64(ref.Fence)
	switch {
	case err != nil:
		o.log.Info("error", "op", "register", "item", ref.Item, "fence", f, "seq", seq, "err", err)
	case reply.Accepted:
		o.log.Info("wrote", "item", ref.Item, "fence", f, "seq", seq, "at_us", at)
	default:
		o.log.Info("rejected", "item", ref.Item, "fence", f, "seq", seq, "last", uint64(reply.Last), "at_us", at)
	}
	return reply.Accepted, reply.Last, err
}

// call POSTs to path of the register and decodes its JSON answer.
func (o *owner) call(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.Register+path, nil)
	if err != nil {
		return err
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("register %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// zombie acts as a holder that ignored Done: once the register has
// accepted a newer fence of the item, it writes with the lost fence, and
// renews the lost Ref at the store. Both must refuse.
func (o *owner) zombie(ctx context.Context, ref lease.Ref) {
	f := uint64(ref.Fence)
	for {
		var reply registerReply
		if err := o.call(ctx, "/last?item="+url.QueryEscape(ref.Item), &reply); err == nil && reply.Last > ref.Fence {
			break
		}
		if ctx.Err() != nil {
			return
		}
		sleepCtx(ctx, ownerStep)
	}
	ok, last, err := o.write(ctx, ref, time.Now().UnixMicro(), true)
	o.log.Info("zombie-register", "item", ref.Item, "fence", f, "accepted", ok, "last", uint64(last), "err", err)
	// A renewal that fails as a call (a partition, an election) says
	// nothing: try again until the store answers.
	err = nil
	for ctx.Err() == nil {
		octx, cancel := o.op(ctx)
		var rs []lease.Renewal
		rs, err = o.s.Renew(octx, ref)
		cancel()
		if err == nil && len(rs) == 1 {
			err = rs[0].Err
			break
		}
		sleepCtx(ctx, ownerStep)
	}
	refused := errors.Is(err, lease.ErrNotHeld) || errors.Is(err, lease.ErrStaleFence)
	o.log.Info("zombie-renew", "item", ref.Item, "fence", f, "refused", refused, "err", err)
}
