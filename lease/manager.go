package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Indexer builds and drops a node's in-memory indexes. A [Manager] calls
// Index for each item it wins and Drop when it gives the item up (evicted,
// lost, drained, or indexing failed). Both are called from the manager's
// goroutines and must be safe for concurrent use.
type Indexer interface {
	// Index builds the index of item at item.Commit and returns its
	// in-memory size in bytes. ctx is cancelled when the lease is lost or
	// the manager stops waiting for it.
	Index(ctx context.Context, item Row) (size int64, err error)
	// Drop forgets the index of item.
	Drop(item string)
}

// Resident is what an [EvictionPolicy] knows about an indexed item.
type Resident struct {
	Item      string
	Size      int64     // bytes, as Index reported
	LastTouch time.Time // the last Touch, or when the item was won
	Touches   uint64    // Touch calls since the item was won
}

// EvictionPolicy orders eviction candidates: it reports whether a should
// be evicted before b.
type EvictionPolicy func(a, b Resident) bool

// EvictLRU evicts the least recently touched item first.
func EvictLRU(a, b Resident) bool { return a.LastTouch.Before(b.LastTouch) }

// EvictSizeTraffic evicts the item with the lowest size × traffic first
// (the cheapest to lose), the least recently touched among equals.
func EvictSizeTraffic(a, b Resident) bool {
	ca, cb := float64(a.Size)*float64(a.Touches), float64(b.Size)*float64(b.Touches)
	if ca != cb {
		return ca < cb
	}
	return EvictLRU(a, b)
}

// ManagerHooks receive node-side events that [Hooks] does not cover. Every
// field may be nil; hooks are called synchronously and must not block.
// [Metrics] provides a ready-made set.
type ManagerHooks struct {
	Won     func(ref Ref)                        // a lease was won and acquired
	Indexed func(ref Ref, size int64, err error) // Index returned
	Evicted func(ref Ref, size int64)            // released and dropped over budget
	// Held gets the number of leases the node holds each time it changes
	// (a gauge). Calls are serialized, and the last one reports the count
	// after the last change.
	Held func(n int)
	// LiveNodes gets the store's count of live nodes after each heartbeat,
	// when the store is a [LiveCounter] (a gauge).
	LiveNodes func(n int)
}

// ManagerOption configures a [Manager].
type ManagerOption func(*managerConfig)

type managerConfig struct {
	idx          Indexer
	budget       int64
	concurrency  int
	heartbeat    time.Duration
	renew        time.Duration
	scan         time.Duration
	backoffBase  time.Duration
	backoffMax   time.Duration
	drainTimeout time.Duration
	policy       EvictionPolicy
	source       Lister
	leaseOpts    []Option
	hooks        ManagerHooks
	log          *slog.Logger
	replication  bool
}

// WithIndexer sets the indexer (required).
func WithIndexer(idx Indexer) ManagerOption { return func(c *managerConfig) { c.idx = idx } }

// WithBudget sets the node's memory budget in bytes (default 1 GiB).
func WithBudget(b int64) ManagerOption { return func(c *managerConfig) { c.budget = b } }

// WithIndexConcurrency bounds concurrent Index calls (default 2).
func WithIndexConcurrency(n int) ManagerOption {
	return func(c *managerConfig) { c.concurrency = n }
}

// WithHeartbeatInterval sets how often the node heartbeats (default 10s).
func WithHeartbeatInterval(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.heartbeat = d }
}

// WithRenewInterval sets how often held leases are renewed, in one batch
// (default a third of the TTL set through WithLeaseOptions, 10s by
// default). It must be well below the store's TTL minus the safety margin.
func WithRenewInterval(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.renew = d }
}

// WithScanInterval sets the mean interval between scans for claimable
// items; each wait is jittered uniformly in [d/2, 3d/2) (default 1s).
func WithScanInterval(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.scan = d }
}

// WithBidBackoff sets the per-item backoff after a rejected or lost bid:
// full jitter over base × 2^attempts, capped at max (default 1s, 1m).
func WithBidBackoff(base, max time.Duration) ManagerOption {
	return func(c *managerConfig) { c.backoffBase, c.backoffMax = base, max }
}

// WithDrainTimeout bounds how long shutdown waits for in-flight indexing
// before releasing (default 30s). A negative timeout abandons held leases
// on shutdown, as a crash would: they are neither drained nor released
// and lapse at their TTL.
func WithDrainTimeout(d time.Duration) ManagerOption {
	return func(c *managerConfig) { c.drainTimeout = d }
}

// WithEviction sets the eviction policy (default [EvictLRU]).
func WithEviction(p EvictionPolicy) ManagerOption { return func(c *managerConfig) { c.policy = p } }

// WithItemSource sets where the manager finds items to bid on; by default
// the store, which must then implement [Lister].
func WithItemSource(src Lister) ManagerOption { return func(c *managerConfig) { c.source = src } }

// WithLeaseOptions sets the options of the manager's [Lease]s (clock,
// hooks, safety margin) and of its renewal interval (TTL). The manager
// also reports its own bids to Hooks.BidPlaced and Hooks.BidRejected.
func WithLeaseOptions(opts ...Option) ManagerOption {
	return func(c *managerConfig) { c.leaseOpts = append(c.leaseOpts, opts...) }
}

// WithReplication makes the manager treat the replica slots of an item
// (see [ReplicaID]) as one item for placement: it never bids on, or holds,
// two slots of the same item, since a replica on the primary's node is
// worthless. Each slot is otherwise an item like any other: the manager
// bids on it, wins it, indexes it proactively and serves it. [Indexer]
// calls get the slot's ID (Row.ID, Drop's item); map it to the item with
// [SplitReplicaID]. Off by default: without it, IDs are not interpreted.
func WithReplication() ManagerOption { return func(c *managerConfig) { c.replication = true } }

// WithManagerHooks sets the manager's hooks.
func WithManagerHooks(h ManagerHooks) ManagerOption { return func(c *managerConfig) { c.hooks = h } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) ManagerOption { return func(c *managerConfig) { c.log = l } }

// Manager is a node's agent: it heartbeats, bids on claimable items, holds
// and renews the leases it wins, indexes their items within a memory
// budget, evicts over budget, and drains on shutdown. Create it with
// [NewManager] and call [Manager.Run] once. Its methods are safe for
// concurrent use.
type Manager struct {
	s    Store
	node string
	c    managerConfig
	lc   Config

	sem chan struct{}

	mu      sync.Mutex
	started bool
	held    map[string]*held
	pins    map[string]bool
	used    int64 // bytes of held items: Index's size, or Row.Size until indexed
	backoff map[string]backoff
	pending string // item of our unaccepted bid, "" if none
	wg      sync.WaitGroup
	heldRep sync.Mutex      // serializes ManagerHooks.Held calls
	work    context.Context // cancelled when Run ends
}

type held struct {
	l         *Lease
	row       Row
	size      int64
	ready     bool
	lastTouch time.Time
	touches   uint64
	indexed   chan struct{} // closed when Index has returned
	gone      bool          // removed from held by the manager itself
}

type backoff struct {
	attempts int
	until    time.Time
}

// NewManager returns the manager of node on store s. It starts nothing.
func NewManager(s Store, node string, opts ...ManagerOption) (*Manager, error) {
	c := managerConfig{
		budget:       1 << 30,
		concurrency:  2,
		heartbeat:    10 * time.Second,
		scan:         time.Second,
		backoffBase:  time.Second,
		backoffMax:   time.Minute,
		drainTimeout: 30 * time.Second,
		policy:       EvictLRU,
	}
	for _, o := range opts {
		o(&c)
	}
	lc, err := NewConfig(c.leaseOpts...)
	if err != nil {
		return nil, fmt.Errorf("lease: manager: %w", err)
	}
	if c.renew == 0 {
		c.renew = lc.TTL / 3
	}
	if c.source == nil {
		c.source, _ = s.(Lister)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case s == nil:
		return nil, fmt.Errorf("lease: manager: nil store: %w", ErrInvalid)
	case node == "":
		return nil, fmt.Errorf("lease: manager: empty node: %w", ErrInvalid)
	case c.idx == nil:
		return nil, fmt.Errorf("lease: manager %s: no indexer: %w", node, ErrInvalid)
	case c.source == nil:
		return nil, fmt.Errorf("lease: manager %s: store is no Lister and no item source: %w", node, ErrInvalid)
	case c.budget <= 0 || c.concurrency < 1 || c.heartbeat <= 0 || c.renew <= 0 || c.scan <= 0:
		return nil, fmt.Errorf("lease: manager %s: budget, concurrency or interval not positive: %w", node, ErrInvalid)
	case c.backoffBase <= 0 || c.backoffMax < c.backoffBase:
		return nil, fmt.Errorf("lease: manager %s: backoff %v..%v: %w", node, c.backoffBase, c.backoffMax, ErrInvalid)
	case c.policy == nil:
		return nil, fmt.Errorf("lease: manager %s: nil eviction policy: %w", node, ErrInvalid)
	}
	return &Manager{
		s: s, node: node, c: c, lc: lc,
		sem:     make(chan struct{}, c.concurrency),
		held:    make(map[string]*held),
		pins:    make(map[string]bool),
		backoff: make(map[string]backoff),
	}, nil
}

// Touch records a query of item, for eviction.
func (m *Manager) Touch(item string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.held[item]; h != nil {
		h.lastTouch = m.lc.Clock.Now()
		h.touches++
	}
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
func (m *Manager) Held() []Ref {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Ref, 0, len(m.held))
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
	return m.used
}

// Run heartbeats, renews, bids, indexes and evicts until ctx is done, then
// stops bidding and drains every held lease: marks it draining, waits for
// its indexing (at most the drain timeout) and releases it. It returns
// only after every goroutine it started has exited, with nil after a
// shutdown by ctx. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("lease: manager %s: Run called twice: %w", m.node, ErrInvalid)
	}
	m.started = true
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	m.work = work
	m.mu.Unlock()
	keep, stopKeep := context.WithCancel(context.WithoutCancel(ctx))

	var bidding, renewing sync.WaitGroup
	bidding.Go(func() { m.every(ctx, m.c.heartbeat, 0, m.heartbeat) })
	bidding.Go(func() { m.every(ctx, m.c.scan, m.c.scan/2, m.scan) })
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

func (m *Manager) heartbeat(ctx context.Context) {
	if err := m.s.Heartbeat(ctx, m.node); err != nil {
		if ctx.Err() == nil {
			m.c.log.Warn("lease: heartbeat failed", "node", m.node, "err", err)
		}
		return
	}
	lc, ok := m.s.(LiveCounter)
	if f := m.c.hooks.LiveNodes; f != nil && ok {
		n, err := lc.LiveNodes(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.c.log.Warn("lease: count live nodes", "node", m.node, "err", err)
			}
			return
		}
		f(n)
	}
}

// reportHeld calls ManagerHooks.Held with the current count. The count is
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
// to under WithReplication, else item itself.
func (m *Manager) group(item string) string {
	if !m.c.replication {
		return item
	}
	g, _ := SplitReplicaID(item)
	return g
}

// occupied returns the groups the node holds a slot of, or bids on. The
// caller holds m.mu.
func (m *Manager) occupied() map[string]bool {
	if !m.c.replication {
		return nil
	}
	out := make(map[string]bool, len(m.held)+1)
	for item := range m.held {
		out[m.group(item)] = true
	}
	if m.pending != "" {
		out[m.group(m.pending)] = true
	}
	return out
}

func (m *Manager) renew(ctx context.Context) {
	m.mu.Lock()
	ls := make([]*Lease, 0, len(m.held))
	for _, h := range m.held {
		ls = append(ls, h.l)
	}
	m.mu.Unlock()
	if err := RenewAll(ctx, m.s, ls...); err != nil && ctx.Err() == nil {
		// Refused leases closed their Done; their holders clean up.
		m.c.log.Warn("lease: renew", "node", m.node, "err", err)
	}
}

func (m *Manager) free() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c.budget - m.used
}

// scan evaluates the auction it bid in and due auctions, picks up grants
// it has not acquired, and bids on one claimable item.
func (m *Manager) scan(ctx context.Context) {
	now := m.lc.Clock.Now()
	m.mu.Lock()
	pend := m.pending
	m.mu.Unlock()
	if pend != "" {
		m.evaluate(ctx, pend)
	}

	var open, idle []Row
	for r, err := range m.c.source.Rows(ctx) {
		if err != nil {
			if ctx.Err() == nil {
				m.c.log.Warn("lease: list items", "node", m.node, "err", err)
			}
			return
		}
		m.mu.Lock()
		_, mine := m.held[r.ID]
		bo := m.backoff[r.ID]
		m.mu.Unlock()
		switch {
		case mine:
		case r.Owner == m.node:
			m.won(ctx, Ref{Item: r.ID, Holder: m.node, Fence: r.Fence}, r)
		case r.Owner != "":
		case r.Bids > 0 && !r.AuctionDeadline.IsZero() && !now.Before(r.AuctionDeadline):
			m.evaluate(ctx, r.ID) // a due auction nobody closed
		case now.Before(bo.until):
		case r.Bids > 0:
			open = append(open, r)
		default:
			idle = append(idle, r)
		}
	}
	m.mu.Lock()
	pend = m.pending
	busy := m.occupied()
	m.mu.Unlock()
	if pend != "" || ctx.Err() != nil {
		return
	}
	free := m.free()
	fits := func(rs []Row) []Row {
		out := rs[:0]
		for _, r := range rs {
			if free >= r.Size && free >= r.MinBid && free > 0 && !busy[m.group(r.ID)] {
				out = append(out, r)
			}
		}
		return out
	}
	cands := fits(open) // join open auctions first, so they short-circuit
	if len(cands) == 0 {
		cands = fits(idle)
	}
	if len(cands) == 0 {
		return
	}
	r := cands[rand.IntN(len(cands))]
	m.bid(ctx, r, free)
}

func (m *Manager) bid(ctx context.Context, r Row, free int64) {
	res, err := m.s.Bid(ctx, r.ID, m.node, free)
	hooks := m.lc.Hooks
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		for _, reason := range []error{ErrBidPending, ErrBidTooLow, ErrLeased, ErrAuctionClosed} {
			if errors.Is(err, reason) {
				if hooks.BidRejected != nil {
					hooks.BidRejected(r.ID, m.node, reason)
				}
				break
			}
		}
		m.c.log.Debug("lease: bid rejected", "node", m.node, "item", r.ID, "err", err)
		m.backOff(r.ID)
		return
	}
	if hooks.BidPlaced != nil {
		hooks.BidPlaced(r.ID, m.node, free)
	}
	// A bid that reached the threshold closed the auction, unless the
	// store holds grants (LossGuard): then the bid stays pending.
	if res.Result != nil && res.Result.Outcome != NotDue {
		m.settle(ctx, *res.Result)
		return
	}
	m.mu.Lock()
	m.pending = r.ID
	m.mu.Unlock()
}

func (m *Manager) evaluate(ctx context.Context, item string) {
	res, err := m.s.Evaluate(ctx, item)
	if err != nil {
		if ctx.Err() == nil {
			m.c.log.Warn("lease: evaluate", "node", m.node, "item", item, "err", err)
		}
		if errors.Is(err, ErrNotFound) {
			m.clearPending(item)
		}
		return
	}
	switch res.Outcome {
	case NotDue:
	case Granted, NoWinner:
		m.settle(ctx, res)
	case NoAuction:
		// Closed by someone else (or our own bid's short circuit): the
		// row tells whether we won; the scan acquires it if so.
		m.clearPending(item)
	}
}

func (m *Manager) clearPending(item string) {
	m.mu.Lock()
	if m.pending == item {
		m.pending = ""
	}
	m.mu.Unlock()
}

// settle acts on a closed auction.
func (m *Manager) settle(ctx context.Context, res AuctionResult) {
	m.clearPending(res.Item)
	if res.Outcome == Granted && res.Grant.Holder == m.node {
		m.won(ctx, res.Grant.Ref, Row{})
		return
	}
	m.backOff(res.Item)
}

func (m *Manager) backOff(item string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.backoff[item]
	d := m.c.backoffBase << min(b.attempts, 30)
	if d <= 0 || d > m.c.backoffMax {
		d = m.c.backoffMax
	}
	b.attempts++
	b.until = m.lc.Clock.Now().Add(time.Duration(rand.Int64N(int64(d)) + 1))
	m.backoff[item] = b
}

// won acquires a granted lease and starts its holder goroutine.
func (m *Manager) won(ctx context.Context, ref Ref, row Row) {
	if row.ID == "" {
		r, err := m.s.Get(ctx, ref.Item)
		if err != nil {
			m.c.log.Warn("lease: read won item", "node", m.node, "item", ref.Item, "err", err)
			return
		}
		row = r
	}
	l, err := Acquire(ctx, m.s, ref, m.c.leaseOpts...)
	if err != nil {
		m.c.log.Warn("lease: acquire", "node", m.node, "item", ref.Item, "err", err)
		return
	}
	h := &held{l: l, row: row, size: row.Size, lastTouch: m.lc.Clock.Now(), indexed: make(chan struct{})}
	m.mu.Lock()
	if m.held[ref.Item] != nil {
		m.mu.Unlock()
		return
	}
	if m.c.replication {
		g := m.group(ref.Item)
		for item := range m.held {
			if m.group(item) == g {
				// Another slot of the same item is here already (a grant
				// that outlived a lost slot): give this one back.
				m.mu.Unlock()
				if err := l.Release(ctx); err != nil {
					m.c.log.Warn("lease: release second replica", "node", m.node, "item", ref.Item, "err", err)
				}
				m.backOff(ref.Item)
				return
			}
		}
	}
	m.held[ref.Item] = h
	m.used += h.size
	delete(m.backoff, ref.Item)
	work := m.work
	m.wg.Add(1)
	m.mu.Unlock()
	if f := m.c.hooks.Won; f != nil {
		f(ref)
	}
	m.reportHeld()
	go m.hold(work, h)
}

// hold indexes a held item, then waits for the lease to end.
func (m *Manager) hold(work context.Context, h *held) {
	defer m.wg.Done()
	ref := h.l.Ref()
	ictx, cancel := context.WithCancel(work)
	defer cancel()
	m.wg.Go(func() {
		select {
		case <-h.l.Done():
			cancel()
		case <-ictx.Done():
		}
	})

	size, err := m.index(ictx, h)
	close(h.indexed)
	if f := m.c.hooks.Indexed; f != nil {
		f(ref, size, err)
	}
	if err == nil {
		ready, now := true, m.lc.Clock.Now()
		_, err = h.l.Update(ictx, Mutation{Ready: &ready, Size: &size, LastIndexed: &now})
	}
	if err != nil {
		if work.Err() == nil && h.l.Err() == nil {
			m.c.log.Warn("lease: index", "node", m.node, "item", ref.Item, "err", err)
			if m.forget(h) {
				_ = h.l.Release(work)
				m.c.idx.Drop(ref.Item)
				m.backOff(ref.Item)
			}
		}
	} else {
		m.mu.Lock()
		if !h.gone {
			m.used += size - h.size
			h.size, h.ready = size, true
		}
		m.mu.Unlock()
		m.evict(work)
	}

	select {
	case <-h.l.Done():
		if m.forget(h) {
			m.c.log.Warn("lease: lost", "node", m.node, "item", ref.Item, "err", h.l.Err())
			m.c.idx.Drop(ref.Item)
		}
	case <-work.Done():
	}
}

func (m *Manager) index(ctx context.Context, h *held) (int64, error) {
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-m.sem }()
	return m.c.idx.Index(ctx, h.row)
}

// forget removes h from the held set, reporting whether it was there.
func (m *Manager) forget(h *held) bool {
	m.mu.Lock()
	item := h.l.Ref().Item
	if h.gone || m.held[item] != h {
		m.mu.Unlock()
		return false
	}
	h.gone = true
	delete(m.held, item)
	m.used -= h.size
	m.mu.Unlock()
	m.reportHeld()
	return true
}

// evict releases and drops indexed, unpinned items, in the policy's
// order, until the node is within its budget.
func (m *Manager) evict(ctx context.Context) {
	m.mu.Lock()
	var victims []*held
	if m.used > m.c.budget {
		var cands []*held
		for item, h := range m.held {
			if h.ready && !m.pins[item] {
				cands = append(cands, h)
			}
		}
		res := func(h *held) Resident {
			return Resident{Item: h.l.Ref().Item, Size: h.size, LastTouch: h.lastTouch, Touches: h.touches}
		}
		sort.Slice(cands, func(i, j int) bool { return m.c.policy(res(cands[i]), res(cands[j])) })
		for _, h := range cands {
			if m.used <= m.c.budget {
				break
			}
			h.gone = true
			delete(m.held, h.l.Ref().Item)
			m.used -= h.size
			victims = append(victims, h)
		}
	}
	m.mu.Unlock()
	if len(victims) > 0 {
		m.reportHeld()
	}
	for _, h := range victims {
		ref := h.l.Ref()
		if err := h.l.Release(ctx); err != nil {
			m.c.log.Warn("lease: release evicted", "node", m.node, "item", ref.Item, "err", err)
		}
		m.c.idx.Drop(ref.Item)
		m.backOff(ref.Item) // do not win it straight back
		if f := m.c.hooks.Evicted; f != nil {
			f(ref, h.size)
		}
	}
}

// drainAll drains every held lease at once, each bounded by the drain
// timeout.
func (m *Manager) drainAll(ctx context.Context) {
	m.mu.Lock()
	hs := make([]*held, 0, len(m.held))
	for _, h := range m.held {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	// The store calls get the TTL on top of the wait: past it, the lease
	// has lapsed anyway.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.drainTimeout+m.lc.TTL)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			ref := h.l.Ref()
			err := h.l.Drain(dctx, func(fctx context.Context) error {
				t := time.NewTimer(m.c.drainTimeout)
				defer t.Stop()
				select {
				case <-h.indexed:
					return nil
				case <-t.C:
					return fmt.Errorf("lease: drain %s: indexing still running after %v: %w", ref.Item, m.c.drainTimeout, context.DeadlineExceeded)
				case <-fctx.Done():
					return fctx.Err()
				}
			})
			if err != nil {
				m.c.log.Warn("lease: drain", "node", m.node, "item", ref.Item, "err", err)
			}
			if m.forget(h) {
				m.c.idx.Drop(ref.Item)
			}
		})
	}
	wg.Wait()
}
