package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/indexkit/indexkit/lease"
)

// Manager is a node's agent: it heartbeats, bids on claimable items, holds
// and renews the leases it wins, indexes their items within a memory
// budget, evicts over budget, and drains on shutdown. Create it with
// [NewManager] and call [Manager.Run] once. Its methods are safe for
// concurrent use.
type Manager struct {
	s    lease.Store
	node string
	feed lease.Watcher // the item source's change feed, or nil: scan by listing
	view *view         // the catalog as the feed shows it, when feed is set
	c    config
	lc   lease.Config

	sem chan struct{}
	// kick asks for a scan before the next tick (see scanLoop): a bid
	// that closed its auction at once, a change the feed shows to the
	// auction the node bid in, or an auction opened while it bids in none.
	kick chan struct{}
	// kickOpen says a kick since the last scan may open an auction; the
	// others only join open ones (see scanLoop).
	kickOpen atomic.Bool

	mu      sync.Mutex
	started bool
	held    map[string]*held
	pins    map[string]bool
	used    int64 // bytes of held items: Index's size, or Row.Size until indexed
	backoff map[string]backoff
	pending string    // item of our unaccepted bid, "" if none
	closes  time.Time // the pending bid's auction deadline, once a scan saw its row
	aside   aside     // kept indexes and starved items: keep.go, starve.go
	sig     signals   // the scan's load signals (signals.go): scan goroutine only
	// claimSpan is the span of the pending bid (WithTracer), or nil.
	claimSpan trace.Span
	// liveNodes is the store's count at the last heartbeat; lastServed
	// the last Touch, in Unix nanoseconds by the manager's clock.
	liveNodes, lastServed atomic.Int64
	// renewSlow: the last renewal round took more than half the renewal
	// interval; the node bids on nothing until one is quick again.
	renewSlow atomic.Bool
	wg        sync.WaitGroup
	heldRep   sync.Mutex      // serializes Hooks.Held calls
	work      context.Context // cancelled when Run ends
}

type held struct {
	l         *lease.Lease
	row       lease.Row
	size      int64
	ready     bool
	lastTouch time.Time
	touches   uint64
	indexed   chan struct{} // closed when Index has returned
	gone      bool          // removed from held by the manager itself
	commit    string        // the commit indexed, once ready
	want      lease.Row     // the latest row seen: its Commit is the one to serve
	refresh   chan struct{} // wakes the holder to index want's commit (keep.go)
	reuse     bool          // a kept index of row's commit: no Index call
}

type backoff struct {
	attempts int
	until    time.Time
}

// NewManager returns the manager of node on store s. It starts nothing.
func NewManager(s lease.Store, node string, opts ...Option) (*Manager, error) {
	c := config{
		budget:       1 << 30,
		concurrency:  2,
		heartbeat:    10 * time.Second,
		scan:         time.Second,
		backoffBase:  time.Second,
		backoffMax:   time.Minute,
		drainTimeout: 30 * time.Second,
		policy:       EvictLRU,
		reconcile:    -1,
		saturation:   20,
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, fmt.Errorf("agent: manager %s: %w", node, err)
		}
	}
	lc, err := lease.NewConfig(c.leaseOpts...)
	if err != nil {
		return nil, fmt.Errorf("agent: manager %s: %w", node, err)
	}
	if c.margin == 0 {
		c.margin = lc.TTL / 10
	}
	if c.margin >= lc.TTL {
		return nil, fmt.Errorf("agent: manager %s: safety margin %v with TTL %v: %w", node, c.margin, lc.TTL, lease.ErrInvalidOption)
	}
	if c.renew == 0 {
		c.renew = lc.TTL / 3
	}
	if c.source == nil {
		c.source, _ = s.(lease.Lister)
	}
	// A feed that reports lapses keeps the view's leases right without
	// expiries: listings are only the safety net.
	lapses := false
	if lr, ok := c.source.(lease.LapseReporter); ok {
		_, watches := c.source.(lease.Watcher)
		lapses = watches && lr.ReportsLapses()
	}
	if c.reconcile < 0 {
		c.reconcile = min(30*time.Second, lc.TTL/2)
		if lapses {
			c.reconcile = max(30*time.Second, lc.TTL/2)
		}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case s == nil:
		return nil, fmt.Errorf("agent: manager: nil store: %w", lease.ErrInvalidOption)
	case node == "":
		return nil, fmt.Errorf("agent: manager: empty node: %w", lease.ErrInvalidOption)
	case c.idx == nil:
		return nil, fmt.Errorf("agent: manager %s: no indexer: %w", node, lease.ErrInvalidOption)
	case c.source == nil:
		return nil, fmt.Errorf("agent: manager %s: store is no Lister and no item source: %w", node, lease.ErrInvalidOption)
	case c.budget <= 0 || c.concurrency < 1 || c.heartbeat <= 0 || c.renew <= 0 || c.scan <= 0 || c.reconcile <= 0:
		return nil, fmt.Errorf("agent: manager %s: budget, concurrency or interval not positive: %w", node, lease.ErrInvalidOption)
	case c.backoffBase <= 0 || c.backoffMax < c.backoffBase:
		return nil, fmt.Errorf("agent: manager %s: backoff %v..%v: %w", node, c.backoffBase, c.backoffMax, lease.ErrInvalidOption)
	case c.policy == nil:
		return nil, fmt.Errorf("agent: manager %s: nil eviction policy: %w", node, lease.ErrInvalidOption)
	}
	feed, _ := c.source.(lease.Watcher)
	var v *view
	if feed != nil {
		v = newView()
		v.lapses = lapses
	}
	return &Manager{
		s: s, node: node, c: c, lc: lc, feed: feed, view: v,
		sem:     make(chan struct{}, c.concurrency),
		kick:    make(chan struct{}, 1),
		held:    make(map[string]*held),
		pins:    make(map[string]bool),
		backoff: make(map[string]backoff),
	}, nil
}

// Touch records a query of item, for eviction and [Signals].LastServed.
func (m *Manager) Touch(item string) {
	now := m.lc.Clock.Now()
	m.lastServed.Store(now.UnixNano())
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.held[item]; h != nil {
		h.lastTouch = now
		h.touches++
	}
}

// Serve is Touch for a query the caller is about to answer from item's
// index: with a tracer ([WithTracer]) it starts an "agent.serve" span,
// a child of ctx's, and returns the span's context and a function that
// ends it, recording err if not nil; without one, ctx and a function
// that does nothing. Call the function once the answer is sent.
func (m *Manager) Serve(ctx context.Context, item string) (context.Context, func(err error)) {
	m.Touch(item)
	if m.c.tracer == nil {
		return ctx, func(error) {}
	}
	ctx, span := m.c.tracer.Start(ctx, "agent.serve", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("lease.item", item), attribute.String("lease.node", m.node)))
	return ctx, func(err error) { endSpan(span, err) }
}

// endSpan records err, if any, on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Pin makes item exempt from eviction, whether or not the node holds it.
func (m *Manager) Pin(item string) {
	m.mu.Lock()
	m.pins[item] = true
	m.mu.Unlock()
}

// Unpin undoes Pin.
func (m *Manager) Unpin(item string) {
	m.mu.Lock()
	delete(m.pins, item)
	m.mu.Unlock()
}

// Held returns the refs of the leases the node holds, sorted by item.
func (m *Manager) Held() []lease.Ref {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]lease.Ref, 0, len(m.held))
	for _, h := range m.held {
		out = append(out, h.l.Ref())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Item < out[j].Item })
	return out
}

// Used returns the bytes the node's held items take (or are expected to
// take, while they are being indexed).
func (m *Manager) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used + m.aside.keptBytes
}

// Run heartbeats, renews, bids, indexes and evicts until ctx is done, then
// stops bidding and drains every held lease: marks it draining, waits for
// its indexing (at most the drain timeout) and releases it. It returns
// only after every goroutine it started has exited, with nil after a
// shutdown by ctx. Run may be called once; a second call returns
// [ErrRunTwice].
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("agent: manager %s: %w", m.node, ErrRunTwice)
	}
	m.started = true
	m.sig.started = m.lc.Clock.Now()
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	m.work = work
	m.mu.Unlock()
	keep, stopKeep := context.WithCancel(context.WithoutCancel(ctx))

	var bidding, renewing, watching sync.WaitGroup
	bidding.Go(func() { m.every(ctx, m.c.heartbeat, 0, m.heartbeat) })
	bidding.Go(func() { m.scanLoop(ctx) })
	if m.feed != nil {
		// Waited for last: a feed may take a moment to notice ctx (a
		// blocking read), which must not delay the drain.
		watching.Go(func() { m.watch(ctx) })
	}
	renewing.Go(func() { m.every(keep, m.c.renew, 0, m.renew) })

	<-ctx.Done()
	bidding.Wait() // no lease is won after this
	if m.c.drainTimeout >= 0 {
		m.drainAll(ctx)
	}
	stopKeep()
	stopWork()
	renewing.Wait()
	m.wg.Wait()
	watching.Wait()
	m.mu.Lock()
	rest := m.held
	m.held, m.used = make(map[string]*held), 0
	for _, h := range rest {
		h.gone = true
	}
	m.mu.Unlock()
	if len(rest) > 0 {
		m.reportHeld()
	}
	for item := range rest {
		m.c.idx.Drop(item)
	}
	m.dropKept(true)
	return nil
}

// every calls f at once and then every d, jittered by ±jitter, until ctx
// is done.
func (m *Manager) every(ctx context.Context, d, jitter time.Duration, f func(context.Context)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f(ctx)
		next := d
		if jitter > 0 {
			next += time.Duration(rand.Int64N(int64(2*jitter))) - jitter
		}
		t.Reset(next)
	}
}

// scanLoop scans at once and then every scan interval, jittered by half
// of it, until ctx is done. A kick brings the next scan forward, to
// kickGap after the kick (an eighth of the interval if that is shorter),
// so that a node claims as fast as auctions close, and a burst of changes
// costs at most one scan per kickGap. While the node has a bid pending,
// the next scan comes no later than the end of its auction's window, when
// the scan closes the auction (no change on the feed would say so).
func (m *Manager) scanLoop(ctx context.Context) {
	minGap := min(m.c.scan/8, kickGap)
	spread := min(m.c.scan/2, openSpread)
	t := time.NewTimer(0)
	defer t.Stop()
	atDeadline := false // the timer is set to the pending auction's close
	// openAt is when the node opens an auction after a scan that could
	// only join found items to open one on. Kicked scans in between only
	// join and leave it be: on a busy feed, a kick comes before every
	// open moment, and a node that put its open off at each would only
	// ever race the others to join.
	var openAt time.Time
	for {
		open := true
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A scan at the close of the node's auction only joins:
			// nodes whose auctions opened together close them together,
			// and would open their next ones together, each waiting out
			// its window alone, for ever. Opening comes soon after, at a
			// random moment (openAt).
			open = !atDeadline
		case <-m.kick:
			t.Stop()
			g := time.NewTimer(minGap)
			select {
			case <-ctx.Done():
				g.Stop()
				return
			case <-g.C:
			}
			open = m.kickOpen.Swap(false)
		}
		now := time.Now()
		if !openAt.IsZero() && !now.Before(openAt) {
			open = true
		}
		next := m.c.scan + time.Duration(rand.Int64N(int64(m.c.scan))) - m.c.scan/2
		wantOpen := m.scan(ctx, open)
		switch {
		case !wantOpen:
			openAt = time.Time{} // bid, pending, or nothing to open
		case openAt.IsZero():
			// At a random moment, so that nodes kicked by the same change
			// do not all open at once.
			openAt = now.Add(minGap + time.Duration(rand.Int64N(int64(spread)+1)))
		}
		if !openAt.IsZero() {
			next = min(next, max(openAt.Sub(time.Now()), 0))
		}
		atDeadline = false
		m.mu.Lock()
		if m.pending != "" && !m.closes.IsZero() {
			if d := max(m.closes.Sub(m.lc.Clock.Now())+minGap, minGap); d < next {
				next, atDeadline = d, true
			}
		}
		m.mu.Unlock()
		t.Reset(next)
	}
}

// kickGap is the longest a kicked scan waits: changes that come in a
// burst (a catalog put, many leases lapsing) share one scan.
const kickGap = 25 * time.Millisecond

// openSpread bounds the random wait before a node opens an auction after
// a scan that could only join (half the scan interval if shorter).
const openSpread = 250 * time.Millisecond

// kickScan asks scanLoop for an early scan; open lets that scan open an
// auction, else it only joins one.
func (m *Manager) kickScan(open bool) {
	if open {
		m.kickOpen.Store(true)
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Manager) heartbeat(ctx context.Context) {
	if err := m.s.Heartbeat(ctx, m.node); err != nil {
		if ctx.Err() == nil {
			m.c.log.Warn("lease: heartbeat failed", "node", m.node, "err", err)
		}
		return
	}
	lc, ok := m.s.(lease.LiveCounter)
	want := m.c.hooks.LiveNodes != nil || m.c.hooks.Scanned != nil || m.c.autoscaler != nil
	if ok && want {
		n, err := lc.LiveNodes(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.c.log.Warn("lease: count live nodes", "node", m.node, "err", err)
			}
			return
		}
		m.liveNodes.Store(int64(n))
		if f := m.c.hooks.LiveNodes; f != nil {
			f(n)
		}
	}
}

// reportHeld calls Hooks.Held with the current count. The count is
// read under heldRep, so the last call reports the count after the last
// change.
func (m *Manager) reportHeld() {
	f := m.c.hooks.Held
	if f == nil {
		return
	}
	m.heldRep.Lock()
	defer m.heldRep.Unlock()
	m.mu.Lock()
	n := len(m.held)
	m.mu.Unlock()
	f(n)
}

// group is the placement group of item: the item a replica slot belongs

func (m *Manager) renew(ctx context.Context) {
	m.dropKept(false) // those kept past their time
	m.mu.Lock()
	ls := make([]*lease.Lease, 0, len(m.held))
	for _, h := range m.held {
		ls = append(ls, h.l)
	}
	m.mu.Unlock()
	t0 := time.Now()
	if err := lease.RenewAll(ctx, m.s, ls...); err != nil && ctx.Err() == nil {
		// Refused leases closed their Done; their holders clean up.
		m.c.log.Warn("lease: renew", "node", m.node, "err", err)
	}
	// Renewals come first: a store too slow to renew in time (its writes
	// queued behind the fleet's claims, say) makes the node stop bidding,
	// so that its claims do not cost it the leases it has.
	took := time.Since(t0)
	slow := len(ls) > 0 && took > m.c.renew/2
	if was := m.renewSlow.Swap(slow); was != slow && ctx.Err() == nil {
		if slow {
			m.c.log.Warn("lease: renewals slow, not bidding", "node", m.node, "took", took, "leases", len(ls))
		} else {
			m.c.log.Info("lease: renewals quick again, bidding", "node", m.node, "took", took)
		}
	}
}
