package memory

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Store is a [lease.Store] held in memory. Create it with [New].
type Store struct {
	cfg lease.Config
	clk lease.Clock

	mu      sync.Mutex
	closed  bool
	items   map[string]*item
	pending map[string]pending   // node -> its unaccepted bid
	live    map[string]time.Time // node -> last heartbeat

	watchers map[*watcher]struct{} // open Watch calls
}

type item struct {
	row lease.Row
	auc *auction
}

type auction struct {
	round    uint64
	deadline time.Time
	seq      uint64
	bids     []lease.Bid
}

type pending struct {
	item    string
	round   uint64
	expires time.Time
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.LiveCounter   = (*Store)(nil)
	_ lease.Lister        = (*Store)(nil)
	_ lease.MaxBidsSetter = (*Store)(nil)
)

// New returns an empty store configured by opts (see [lease.NewConfig]).
// It starts no goroutines.
func New(opts ...lease.Option) (*Store, error) {
	cfg, err := lease.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return &Store{
		cfg:     cfg,
		clk:     cfg.Clock,
		items:   make(map[string]*item),
		pending: make(map[string]pending),
		live:    make(map[string]time.Time),
	}, nil
}

// SetMaxBids implements [lease.MaxBidsSetter]: the static short-circuit
// threshold ([lease.WithMaxBids]) becomes n (0: none) from the next Bid or
// Evaluate on.
func (s *Store) SetMaxBids(n int) error {
	if n < 0 {
		return fmt.Errorf("lease/memory: set max bids %d: %w", n, lease.ErrInvalid)
	}
	if err := s.begin(context.Background(), "set max bids"); err != nil {
		return err
	}
	s.cfg.MaxBids = n // read under s.mu by threshold
	s.mu.Unlock()
	return nil
}

// events collects hook calls made under the lock, to run after it.
type events []func()

func (e events) run() {
	for _, f := range e {
		f()
	}
}

func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease/memory: %s: %w", op, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("lease/memory: %s: %w", op, lease.ErrClosed)
	}
	return nil
}

// expire turns a lapsed lease into an idle row.
func expire(it *item, now time.Time) {
	r := &it.row
	if r.Owner != "" && !now.Before(r.Expiry) {
		r.Owner, r.State, r.Ready, r.Expiry = "", lease.Idle, false, time.Time{}
	}
}

func (s *Store) get(id string, now time.Time) (*item, error) {
	it := s.items[id]
	if it == nil {
		return nil, fmt.Errorf("lease/memory: item %q: %w", id, lease.ErrNotFound)
	}
	expire(it, now)
	return it, nil
}

func (s *Store) rowOf(it *item) lease.Row {
	r := it.row
	if a := it.auc; a != nil {
		r.Bids, r.AuctionDeadline = len(a.bids), a.deadline
	}
	return r
}

// Put implements [lease.Store].
func (s *Store) Put(ctx context.Context, it lease.Item) error {
	if it.ID == "" || it.Size < 0 || it.MinBid < 0 || it.MaxBids < 0 {
		return fmt.Errorf("lease/memory: put %q: %w", it.ID, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "put"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	x := s.items[it.ID]
	if x == nil {
		x = &item{}
		s.items[it.ID] = x
	}
	x.row.Item = it
	x.row.Version++
	s.emit(x)
	return nil
}

// Get implements [lease.Store].
func (s *Store) Get(ctx context.Context, id string) (lease.Row, error) {
	if err := s.begin(ctx, "get"); err != nil {
		return lease.Row{}, err
	}
	defer s.mu.Unlock()
	it, err := s.get(id, s.clk.Now())
	if err != nil {
		return lease.Row{}, err
	}
	return s.rowOf(it), nil
}

// Rows implements [lease.Lister]. It copies the rows first, so the loop
// body may call the store.
func (s *Store) Rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	return func(yield func(lease.Row, error) bool) {
		if err := s.begin(ctx, "rows"); err != nil {
			yield(lease.Row{}, err)
			return
		}
		now := s.clk.Now()
		rows := make([]lease.Row, 0, len(s.items))
		for _, it := range s.items {
			expire(it, now)
			rows = append(rows, s.rowOf(it))
		}
		s.mu.Unlock()
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Heartbeat implements [lease.Store].
func (s *Store) Heartbeat(ctx context.Context, node string) error {
	if node == "" {
		return fmt.Errorf("lease/memory: heartbeat: empty node: %w", lease.ErrInvalid)
	}
	if err := s.begin(ctx, "heartbeat"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	now := s.clk.Now()
	s.live[node] = now
	if len(s.live) > 64 && len(s.live)%64 == 0 {
		s.liveCount(now) // prunes
	}
	return nil
}

// LiveNodes implements [lease.LiveCounter].
func (s *Store) LiveNodes(ctx context.Context) (int, error) {
	if err := s.begin(ctx, "live nodes"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.liveCount(s.clk.Now()), nil
}

func (s *Store) isLive(node string, now time.Time) bool {
	t, ok := s.live[node]
	return ok && now.Sub(t) < s.cfg.LivenessWindow
}

// liveCount counts live nodes and forgets the others.
func (s *Store) liveCount(now time.Time) int {
	for n, t := range s.live {
		if now.Sub(t) >= s.cfg.LivenessWindow {
			delete(s.live, n)
		}
	}
	return len(s.live)
}

func (s *Store) threshold(it *item, now time.Time) int {
	live := 0
	if s.cfg.DynamicMaxBids && it.row.MaxBids <= 0 {
		live = s.liveCount(now)
	}
	return s.cfg.Threshold(it.row.MaxBids, live)
}

func (s *Store) reject(ev *events, id, node string, reason error) error {
	if h := s.cfg.Hooks.BidRejected; h != nil {
		*ev = append(*ev, func() { h(id, node, reason) })
	}
	return fmt.Errorf("lease/memory: bid on %q by %q: %w", id, node, reason)
}

// Bid implements [lease.Store].
func (s *Store) Bid(ctx context.Context, id, node string, free int64) (lease.BidResult, error) {
	if id == "" || node == "" || free < 0 {
		return lease.BidResult{}, fmt.Errorf("lease/memory: bid on %q by %q: %w", id, node, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "bid"); err != nil {
		return lease.BidResult{}, err
	}
	var ev events
	res, err := s.bid(&ev, id, node, free)
	s.mu.Unlock()
	ev.run()
	return res, err
}

func (s *Store) bid(ev *events, id, node string, free int64) (lease.BidResult, error) {
	now := s.clk.Now()
	it, err := s.get(id, now)
	if err != nil {
		return lease.BidResult{}, err
	}
	if it.row.Owner != "" {
		return lease.BidResult{}, s.reject(ev, id, node, lease.ErrLeased)
	}
	if free < it.row.MinBid {
		return lease.BidResult{}, s.reject(ev, id, node, lease.ErrBidTooLow)
	}
	if p, ok := s.pending[node]; ok {
		if now.Before(p.expires) {
			return lease.BidResult{}, s.reject(ev, id, node, lease.ErrBidPending)
		}
		delete(s.pending, node)
	}
	a := it.auc
	if a != nil && !now.Before(a.deadline) {
		s.evaluate(ev, id, it, now)
		return lease.BidResult{}, s.reject(ev, id, node, lease.ErrAuctionClosed)
	}
	if a == nil {
		it.row.Round++
		a = &auction{round: it.row.Round, deadline: now.Add(s.cfg.AuctionWindow)}
		it.auc = a
		if h := s.cfg.Hooks.AuctionStarted; h != nil {
			round := a.round
			*ev = append(*ev, func() { h(id, round) })
		}
	}
	a.seq++
	a.bids = append(a.bids, lease.Bid{Node: node, FreeMemory: free, Seq: a.seq})
	s.pending[node] = pending{item: id, round: a.round, expires: now.Add(s.cfg.AuctionWindow + s.cfg.PendingGrace)}
	if h := s.cfg.Hooks.BidPlaced; h != nil {
		*ev = append(*ev, func() { h(id, node, free) })
	}
	s.emit(it)
	res := lease.BidResult{Round: a.round, Seq: a.seq, Bids: len(a.bids)}
	if n := s.threshold(it, now); n > 0 && len(a.bids) >= n {
		r := s.evaluate(ev, id, it, now)
		res.Result = &r
	}
	return res, nil
}

// Evaluate implements [lease.Store].
func (s *Store) Evaluate(ctx context.Context, id string) (lease.AuctionResult, error) {
	if err := s.begin(ctx, "evaluate"); err != nil {
		return lease.AuctionResult{}, err
	}
	var ev events
	now := s.clk.Now()
	it, err := s.get(id, now)
	var r lease.AuctionResult
	if err == nil {
		r = s.evaluate(&ev, id, it, now)
	}
	s.mu.Unlock()
	ev.run()
	return r, err
}

// evaluate closes it's auction if it is due.
func (s *Store) evaluate(ev *events, id string, it *item, now time.Time) lease.AuctionResult {
	a := it.auc
	r := lease.AuctionResult{Item: id, Unleased: it.row.Unleased}
	if a == nil {
		return r
	}
	r.Round, r.Bids, r.Deadline = a.round, len(a.bids), a.deadline
	timedOut := !now.Before(a.deadline)
	n := s.threshold(it, now)
	r.Threshold = n
	short := n > 0 && len(a.bids) >= n
	if !timedOut && !short {
		r.Outcome = lease.NotDue
		return r
	}
	r.ShortCircuited, r.TimedOut = short && !timedOut, timedOut
	it.auc = nil
	for _, b := range a.bids {
		if p, ok := s.pending[b.Node]; ok && p.item == id && p.round == a.round {
			delete(s.pending, b.Node)
		}
	}
	var best *lease.Bid
	for i := range a.bids {
		b := &a.bids[i]
		if b.FreeMemory < it.row.MinBid || (s.cfg.LiveBiddersOnly && !s.isLive(b.Node, now)) {
			continue
		}
		if best == nil || b.Beats(*best) {
			best = b
		}
	}
	hooks := s.cfg.Hooks
	if best == nil || it.row.Owner != "" {
		it.row.Unleased++
		r.Outcome, r.Unleased = lease.NoWinner, it.row.Unleased
		r.Starved = it.row.Unleased >= s.cfg.StarveAfter
		add(ev, hooks.AuctionNoWinner, r)
		if r.Starved && hooks.ItemStarved != nil {
			f, u := hooks.ItemStarved, r.Unleased
			*ev = append(*ev, func() { f(id, u) })
		}
	} else {
		row := &it.row
		row.Fence++
		row.Owner, row.State, row.Ready = best.Node, lease.Leased, false
		row.Expiry = now.Add(s.cfg.TTL)
		row.Unleased = 0
		r.Outcome, r.Unleased = lease.Granted, 0
		r.Grant = &lease.Grant{
			Ref:    lease.Ref{Item: id, Holder: best.Node, Fence: row.Fence},
			Expiry: row.Expiry, TTL: s.cfg.TTL, Round: a.round, Bids: len(a.bids),
		}
		add(ev, hooks.AuctionWon, r)
	}
	if r.ShortCircuited {
		add(ev, hooks.AuctionShortCircuited, r)
	}
	if r.TimedOut {
		add(ev, hooks.AuctionTimedOut, r)
	}
	s.emit(it)
	return r
}

func add(ev *events, h func(lease.AuctionResult), r lease.AuctionResult) {
	if h != nil {
		*ev = append(*ev, func() { h(r) })
	}
}

// check returns the item of ref if ref is its current, unexpired grant.
func (s *Store) check(ref lease.Ref, now time.Time) (*item, error) {
	it, err := s.get(ref.Item, now)
	if err != nil {
		return nil, err
	}
	r := &it.row
	switch {
	case ref.Fence < r.Fence:
		return nil, fmt.Errorf("lease/memory: %q fence %d, newest %d: %w", ref.Item, ref.Fence, r.Fence, lease.ErrStaleFence)
	case ref.Fence > r.Fence || r.Owner == "" || r.Owner != ref.Holder:
		return nil, fmt.Errorf("lease/memory: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
	}
	return it, nil
}

// Renew implements [lease.Store].
func (s *Store) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	if err := s.begin(ctx, "renew"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.clk.Now()
	out := make([]lease.Renewal, len(refs))
	for i, ref := range refs {
		out[i].Ref = ref
		it, err := s.check(ref, now)
		if err != nil {
			out[i].Err = err
			continue
		}
		it.row.Expiry = now.Add(s.cfg.TTL)
		out[i].Expiry, out[i].TTL = it.row.Expiry, s.cfg.TTL
	}
	return out, nil
}

// Release implements [lease.Store].
func (s *Store) Release(ctx context.Context, ref lease.Ref) error {
	if err := s.begin(ctx, "release"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	it, err := s.check(ref, s.clk.Now())
	if err != nil {
		return err
	}
	r := &it.row
	r.Owner, r.State, r.Ready, r.Expiry = "", lease.Idle, false, time.Time{}
	s.emit(it)
	return nil
}

// Update implements [lease.Store].
func (s *Store) Update(ctx context.Context, ref lease.Ref, m lease.Mutation) (lease.Row, error) {
	if m.Size != nil && *m.Size < 0 {
		return lease.Row{}, fmt.Errorf("lease/memory: update %q: size %d: %w", ref.Item, *m.Size, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "update"); err != nil {
		return lease.Row{}, err
	}
	defer s.mu.Unlock()
	it, err := s.check(ref, s.clk.Now())
	if err != nil {
		return lease.Row{}, err
	}
	r := &it.row
	if m.IfVersion != nil && *m.IfVersion != r.Version {
		return lease.Row{}, fmt.Errorf("lease/memory: update %q: version %d, want %d: %w", ref.Item, r.Version, *m.IfVersion, lease.ErrVersionConflict)
	}
	if m.Commit != nil {
		r.Commit = *m.Commit
	}
	if m.Ready != nil {
		r.Ready = *m.Ready
	}
	if m.Size != nil {
		r.Size = *m.Size
		r.MinBid = s.cfg.MinBidFor(*m.Size)
	}
	if m.LastIndexed != nil {
		r.LastIndexed = *m.LastIndexed
	}
	if m.Draining {
		r.State = lease.Draining
	}
	r.Version++
	s.emit(it)
	return s.rowOf(it), nil
}

// Close implements [lease.Store]: it drops everything. Every later call
// returns an error wrapping [lease.ErrClosed].
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.closeWatchers()
	s.items, s.pending, s.live = nil, nil, nil
	return nil
}
