package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indexkit/indexkit/lease"
)

// maxAttempts bounds the retries of one operation whose transaction lost
// its compares to concurrent writers.
const maxAttempts = 200

// chunk is the most keys one read transaction gets (etcd's default
// --max-txn-ops is 128).
const chunk = 120

// Store is a [lease.Store] on etcd. Create it with [New].
type Store struct {
	cli     *clientv3.Client
	prefix  string
	cfg     lease.Config
	maxBids atomic.Int64
	closed  atomic.Bool
	done    chan struct{}
	ka      *keepAlive // the renewals' keep-alive stream
	ttl     int64      // seconds
	window  int64
	pend    int64
	live    int64
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.LiveCounter   = (*Store)(nil)
	_ lease.Lister        = (*Store)(nil)
	_ lease.Watcher       = (*Store)(nil)
	_ lease.MaxBidsSetter = (*Store)(nil)
	_ lease.LapseReporter = (*Store)(nil)

	_ lease.RowExpiryReporter = (*Store)(nil)
)

func seconds(what string, d time.Duration) (int64, error) {
	if d%time.Second != 0 {
		return 0, fmt.Errorf("lease/etcd: %s %v is not a whole number of seconds (etcd lease TTLs are): %w", what, d, lease.ErrInvalidOption)
	}
	return int64(d / time.Second), nil
}

// New returns a store that keeps its keys under prefix on cli, configured
// by opts (see [lease.NewConfig]). The TTL, the auction window, the window
// plus the pending grace, and the liveness window must be whole seconds,
// since they are etcd lease TTLs; other values are refused with
// lease.ErrInvalid. The Clock and LossGuard options are ignored. The
// caller owns cli: Close does not close it. New makes no request.
func New(cli *clientv3.Client, prefix string, opts ...lease.Option) (*Store, error) {
	cfg, err := lease.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("lease/etcd: %w", err)
	}
	if cli == nil || prefix == "" {
		return nil, fmt.Errorf("lease/etcd: nil client or empty prefix: %w", lease.ErrInvalidOption)
	}
	s := &Store{cli: cli, prefix: prefix, cfg: cfg, done: make(chan struct{})}
	s.ka = &keepAlive{cli: cli, done: s.done}
	for _, x := range []struct {
		what string
		d    time.Duration
		to   *int64
	}{
		{"TTL", cfg.TTL, &s.ttl},
		{"auction window", cfg.AuctionWindow, &s.window},
		{"auction window plus pending grace", cfg.AuctionWindow + cfg.PendingGrace, &s.pend},
		{"liveness window", cfg.LivenessWindow, &s.live},
	} {
		if *x.to, err = seconds(x.what, x.d); err != nil {
			return nil, err
		}
	}
	s.maxBids.Store(int64(cfg.MaxBids))
	return s, nil
}

// SetMaxBids implements [lease.MaxBidsSetter].
func (s *Store) SetMaxBids(n int) error {
	if n < 0 {
		return fmt.Errorf("lease/etcd: max bids %d: %w", n, lease.ErrInvalid)
	}
	if s.closed.Load() {
		return fmt.Errorf("lease/etcd: set max bids: %w", lease.ErrClosed)
	}
	s.maxBids.Store(int64(n))
	return nil
}

// The key layout; see the package documentation.
func (s *Store) rowKey(id string) string    { return s.prefix + "r/" + id }
func (s *Store) ownKey(id string) string    { return s.prefix + "o/" + id }
func (s *Store) expKey(id string) string    { return s.prefix + "e/" + id }
func (s *Store) aucKey(id string) string    { return s.prefix + "a/" + id }
func (s *Store) pendKey(node string) string { return s.prefix + "p/" + node }
func (s *Store) nodeKey(node string) string { return s.prefix + "n/" + node }

func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease/etcd: %s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("lease/etcd: %s: %w", op, lease.ErrClosed)
	}
	return nil
}

// row is the stored catalog row. Owner, Fence, State and Ready describe
// the newest grant; the grant is live only while the owner key holds
// "holder fence".
type row struct {
	Commit   string `json:"c,omitempty"`
	Size     int64  `json:"s,omitempty"`
	MaxBids  int    `json:"mb,omitempty"`
	MinBid   int64  `json:"mn,omitempty"`
	Owner    string `json:"o,omitempty"`
	Fence    uint64 `json:"f,omitempty"`
	State    uint8  `json:"st,omitempty"`
	Version  uint64 `json:"v,omitempty"`
	Ready    bool   `json:"rd,omitempty"`
	Last     int64  `json:"l,omitempty"` // ns, 0 unset
	LastSet  bool   `json:"ls,omitempty"`
	Round    uint64 `json:"rn,omitempty"`
	Unleased int    `json:"u,omitempty"`
	Open     bool   `json:"op,omitempty"`
	Deadline int64  `json:"dl,omitempty"` // ns, reported only
	Bids     []bid  `json:"b,omitempty"`
}

type bid struct {
	Node string `json:"n"`
	Free int64  `json:"f"`
}

func ownValue(holder string, f uint64) string { return strconv.FormatUint(f, 10) + " " + holder }

func parseOwn(v []byte) (string, uint64) {
	f, h, _ := strings.Cut(string(v), " ")
	n, _ := strconv.ParseUint(f, 10, 64)
	return h, n
}

// snap is what one read of an item saw.
type snap struct {
	id       string
	r        row
	exists   bool
	rowRev   int64
	own      *kv // nil: no live grant
	exp      int64
	auc      *kv // nil: the window has passed (or no auction)
	liveN    int64
	pend     *kv // the bidder's pending marker
	revision int64
}

type kv struct {
	val   []byte
	mod   int64
	lease int64
}

func kvOf(r *clientv3.GetResponse) *kv {
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	k := r.Kvs[0]
	return &kv{val: k.Value, mod: k.ModRevision, lease: k.Lease}
}

func modOf(k *kv) int64 {
	if k == nil {
		return 0
	}
	return k.mod
}

// held reports whether the newest grant is live: the owner key names it.
func (sn *snap) held() bool {
	if sn.own == nil {
		return false
	}
	h, f := parseOwn(sn.own.val)
	return h == sn.r.Owner && f == sn.r.Fence
}

// windowPassed reports whether the open auction's window key is gone.
func (sn *snap) windowPassed() bool {
	return sn.auc == nil || string(sn.auc.val) != strconv.FormatUint(sn.r.Round, 10)
}

// read takes a snapshot of item id (and node's pending marker if node is
// not empty) in one read transaction.
func (s *Store) read(ctx context.Context, id, node string, count bool) (*snap, error) {
	ops := []clientv3.Op{
		clientv3.OpGet(s.rowKey(id)), clientv3.OpGet(s.ownKey(id)),
		clientv3.OpGet(s.expKey(id)), clientv3.OpGet(s.aucKey(id)),
	}
	if count {
		ops = append(ops, clientv3.OpGet(s.nodeKey(""), clientv3.WithPrefix(), clientv3.WithCountOnly()))
	}
	if node != "" {
		ops = append(ops, clientv3.OpGet(s.pendKey(node)))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, err
	}
	g := func(i int) *clientv3.GetResponse {
		return (*clientv3.GetResponse)(resp.Responses[i].GetResponseRange())
	}
	sn := &snap{id: id, revision: resp.Header.Revision}
	if k := kvOf(g(0)); k != nil {
		if err := json.Unmarshal(k.val, &sn.r); err != nil {
			return nil, fmt.Errorf("row %q: %w", id, err)
		}
		sn.exists, sn.rowRev = true, k.mod
	}
	sn.own = kvOf(g(1))
	if k := kvOf(g(2)); k != nil {
		sn.exp, _ = strconv.ParseInt(string(k.val), 10, 64)
	}
	sn.auc = kvOf(g(3))
	i := 4
	if count {
		sn.liveN = g(i).Count
		i++
	}
	if node != "" {
		sn.pend = kvOf(g(i))
	}
	return sn, nil
}

// public turns a snapshot into the row callers see.
func (sn *snap) public() lease.Row {
	r := sn.r
	out := lease.Row{
		Item:    lease.Item{ID: sn.id, Commit: r.Commit, Size: r.Size, MaxBids: r.MaxBids, MinBid: r.MinBid},
		Fence:   lease.Fence(r.Fence),
		Version: r.Version, Round: r.Round, Unleased: r.Unleased,
	}
	if sn.held() {
		out.Owner, out.State, out.Ready = r.Owner, lease.State(r.State), r.Ready
		if sn.exp != 0 {
			out.Expiry = time.Unix(0, sn.exp)
		}
	}
	if r.LastSet {
		out.LastIndexed = time.Unix(0, r.Last)
	}
	if r.Open {
		out.Bids, out.AuctionDeadline = len(r.Bids), time.Unix(0, r.Deadline)
	}
	return out
}

// lapse clears the grant fields of a row whose grant is no longer live.
func (sn *snap) lapse() {
	if !sn.held() {
		sn.r.Owner, sn.r.State, sn.r.Ready = "", uint8(lease.Idle), false
	}
}

func (s *Store) notFound(id string) error {
	return fmt.Errorf("lease/etcd: item %q: %w", id, lease.ErrNotFound)
}

// Put implements [lease.Store].
func (s *Store) Put(ctx context.Context, it lease.Item) error {
	if it.ID == "" || it.Size < 0 || it.MinBid < 0 || it.MaxBids < 0 {
		return fmt.Errorf("lease/etcd: put %q: %w", it.ID, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "put"); err != nil {
		return err
	}
	for range maxAttempts {
		resp, err := s.cli.Get(ctx, s.rowKey(it.ID))
		if err != nil {
			return fmt.Errorf("lease/etcd: put %q: %w", it.ID, err)
		}
		var r row
		var rev int64
		if k := kvOf(resp); k != nil {
			if err := json.Unmarshal(k.val, &r); err != nil {
				return fmt.Errorf("lease/etcd: put %q: %w", it.ID, err)
			}
			rev = k.mod
		}
		r.Commit, r.Size, r.MaxBids, r.MinBid = it.Commit, it.Size, it.MaxBids, it.MinBid
		r.Version++
		b, _ := json.Marshal(&r)
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.rowKey(it.ID)), "=", rev)).
			Then(clientv3.OpPut(s.rowKey(it.ID), string(b))).Commit()
		if err != nil {
			return fmt.Errorf("lease/etcd: put %q: %w", it.ID, err)
		}
		if tr.Succeeded {
			return nil
		}
	}
	return s.contention("put", it.ID)
}

func (s *Store) contention(op, id string) error {
	return fmt.Errorf("lease/etcd: %s %q: %d transactions lost to concurrent writers", op, id, maxAttempts)
}

// Get implements [lease.Store].
func (s *Store) Get(ctx context.Context, id string) (lease.Row, error) {
	if err := s.begin(ctx, "get"); err != nil {
		return lease.Row{}, err
	}
	sn, err := s.read(ctx, id, "", false)
	if err != nil {
		return lease.Row{}, fmt.Errorf("lease/etcd: get %q: %w", id, err)
	}
	if !sn.exists {
		return lease.Row{}, s.notFound(id)
	}
	return sn.public(), nil
}

// Heartbeat implements [lease.Store]: it keeps the node's key alive, or
// puts it again on a new lease of the liveness window.
func (s *Store) Heartbeat(ctx context.Context, node string) error {
	if node == "" {
		return fmt.Errorf("lease/etcd: heartbeat: empty node: %w", lease.ErrInvalid)
	}
	if err := s.begin(ctx, "heartbeat"); err != nil {
		return err
	}
	resp, err := s.cli.Get(ctx, s.nodeKey(node))
	if err != nil {
		return fmt.Errorf("lease/etcd: heartbeat %q: %w", node, err)
	}
	if k := kvOf(resp); k != nil && k.lease != 0 {
		if _, err := s.cli.KeepAliveOnce(ctx, clientv3.LeaseID(k.lease)); err == nil {
			return nil
		}
	}
	lg, err := s.cli.Grant(ctx, s.live)
	if err != nil {
		return fmt.Errorf("lease/etcd: heartbeat %q: %w", node, err)
	}
	if _, err := s.cli.Put(ctx, s.nodeKey(node), "", clientv3.WithLease(lg.ID)); err != nil {
		return fmt.Errorf("lease/etcd: heartbeat %q: %w", node, err)
	}
	return nil
}

// LiveNodes implements [lease.LiveCounter]: the node keys still alive.
func (s *Store) LiveNodes(ctx context.Context) (int, error) {
	if err := s.begin(ctx, "live nodes"); err != nil {
		return 0, err
	}
	resp, err := s.cli.Get(ctx, s.nodeKey(""), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("lease/etcd: live nodes: %w", err)
	}
	return int(resp.Count), nil
}

func (s *Store) threshold(sn *snap) int {
	c := s.cfg
	c.MaxBids = int(s.maxBids.Load())
	return c.Threshold(sn.r.MaxBids, int(sn.liveN))
}

func (s *Store) reject(id, node string, reason error) error {
	if h := s.cfg.Hooks.BidRejected; h != nil {
		h(id, node, reason)
	}
	return fmt.Errorf("lease/etcd: bid on %q by %q: %w", id, node, reason)
}

// leases holds the etcd leases an operation granted, so that a retry
// reuses them and the unused ones are revoked at the end.
type leases struct {
	s    *Store
	ids  map[string]clientv3.LeaseID
	at   map[string]time.Time // client time before the grant was sent
	used map[string]bool
}

func (s *Store) newLeases() *leases {
	return &leases{s: s, ids: map[string]clientv3.LeaseID{}, at: map[string]time.Time{}, used: map[string]bool{}}
}

// get returns the lease named what, granting it (ttl seconds) if needed,
// and the client time before its grant was sent: the lease cannot expire
// before that time plus ttl.
func (l *leases) get(ctx context.Context, what string, ttl int64) (clientv3.LeaseID, time.Time, error) {
	if id, ok := l.ids[what]; ok {
		return id, l.at[what], nil
	}
	t0 := time.Now()
	g, err := l.s.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, t0, err
	}
	l.ids[what], l.at[what] = g.ID, t0
	return g.ID, t0, nil
}

// prefetch grants at once the leases of want that l does not hold yet,
// so that their grants share the server's round trips and disk syncs
// rather than wait for each other; get then finds them. A failed grant
// is left for get to meet again.
func (l *leases) prefetch(ctx context.Context, want map[string]int64) {
	missing := map[string]int64{}
	for what, ttl := range want {
		if _, ok := l.ids[what]; !ok {
			missing[what] = ttl
		}
	}
	// The grants write l's maps as they come back: l is read above, not
	// in the loop that starts them.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for what, ttl := range missing {
		wg.Go(func() {
			t0 := time.Now()
			g, err := l.s.cli.Grant(ctx, ttl)
			if err != nil {
				return
			}
			mu.Lock()
			l.ids[what], l.at[what] = g.ID, t0
			mu.Unlock()
		})
	}
	wg.Wait()
}

// done revokes the leases no committed write uses.
func (l *leases) done() {
	for what, id := range l.ids {
		if !l.used[what] {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = l.s.cli.Revoke(ctx, id)
			cancel()
		}
	}
}

// Bid implements [lease.Store].
func (s *Store) Bid(ctx context.Context, id, node string, free int64) (lease.BidResult, error) {
	if id == "" || node == "" || free < 0 {
		return lease.BidResult{}, fmt.Errorf("lease/etcd: bid on %q by %q: %w", id, node, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "bid"); err != nil {
		return lease.BidResult{}, err
	}
	ls := s.newLeases()
	defer ls.done()
	for range maxAttempts {
		res, ev, ok, err := s.bidOnce(ctx, ls, id, node, free)
		if err != nil || !ok {
			if err != nil {
				return lease.BidResult{}, err
			}
			continue
		}
		ev()
		return res, nil
	}
	return lease.BidResult{}, s.contention("bid", id)
}

// bidOnce tries once; ok is false when its transaction lost a compare.
// The returned function calls the hooks (or returns the rejection).
func (s *Store) bidOnce(ctx context.Context, ls *leases, id, node string, free int64) (lease.BidResult, func(), bool, error) {
	sn, err := s.read(ctx, id, node, s.cfg.DynamicMaxBids)
	if err != nil {
		return lease.BidResult{}, nil, false, fmt.Errorf("lease/etcd: bid on %q: %w", id, err)
	}
	if !sn.exists {
		return lease.BidResult{}, nil, false, s.notFound(id)
	}
	if sn.held() {
		return lease.BidResult{}, nil, false, s.reject(id, node, lease.ErrLeased)
	}
	if free < sn.r.MinBid {
		return lease.BidResult{}, nil, false, s.reject(id, node, lease.ErrBidTooLow)
	}
	if sn.pend != nil {
		return lease.BidResult{}, nil, false, s.reject(id, node, lease.ErrBidPending)
	}
	sn.lapse()
	w := &write{s: s, sn: sn, ls: ls}
	// The bidder's marker must still be absent when the bid commits.
	w.cmps = append(w.cmps, clientv3.Compare(clientv3.CreateRevision(s.pendKey(node)), "=", 0))
	if sn.r.Open && sn.windowPassed() {
		r, err := s.close(ctx, w, "")
		if err != nil {
			return lease.BidResult{}, nil, false, err
		}
		if ok, err := w.commit(ctx, "bid"); err != nil || !ok {
			return lease.BidResult{}, nil, ok, err
		}
		s.evaluated(r)
		return lease.BidResult{}, nil, false, s.reject(id, node, lease.ErrAuctionClosed)
	}
	opening := !sn.r.Open
	if opening {
		sn.r.Round++
		sn.r.Open, sn.r.Bids = true, nil
		sn.r.Deadline = time.Now().Add(s.cfg.AuctionWindow).UnixNano()
	}
	sn.r.Bids = append(sn.r.Bids, bid{Node: node, Free: free})
	n := len(sn.r.Bids)
	res := lease.BidResult{Round: sn.r.Round, Seq: uint64(n), Bids: n}
	th := s.threshold(sn)
	closes := th > 0 && n >= th
	if !closes {
		// The auction stays open: its window key (when it opens) and the
		// bidder's pending marker, each on an etcd lease.
		if opening {
			ls.prefetch(ctx, map[string]int64{"window": s.window, "pending": s.pend})
			lid, t0, err := ls.get(ctx, "window", s.window)
			if err != nil {
				return lease.BidResult{}, nil, false, fmt.Errorf("lease/etcd: bid on %q: %w", id, err)
			}
			sn.r.Deadline = t0.Add(s.cfg.AuctionWindow).UnixNano()
			w.auc = []clientv3.Op{clientv3.OpPut(s.aucKey(id), strconv.FormatUint(sn.r.Round, 10), clientv3.WithLease(lid))}
			w.uses = append(w.uses, "window")
		}
		pl, _, err := ls.get(ctx, "pending", s.pend)
		if err != nil {
			return lease.BidResult{}, nil, false, fmt.Errorf("lease/etcd: bid on %q: %w", id, err)
		}
		w.ops = append(w.ops, clientv3.OpPut(s.pendKey(node), s.tag(sn.r.Round, id), clientv3.WithLease(pl)))
		w.uses = append(w.uses, "pending")
	}
	var closed *lease.AuctionResult
	if closes {
		// The bid closes the auction at once: no window key and no marker
		// for this bidder.
		r, err := s.close(ctx, w, node)
		if err != nil {
			return lease.BidResult{}, nil, false, err
		}
		closed = &r
		res.Result = closed
	}
	if ok, err := w.commit(ctx, "bid"); err != nil || !ok {
		return lease.BidResult{}, nil, ok, err
	}
	return res, func() {
		h := s.cfg.Hooks
		if opening && h.AuctionStarted != nil {
			h.AuctionStarted(id, res.Round)
		}
		if h.BidPlaced != nil {
			h.BidPlaced(id, node, free)
		}
		if closed != nil {
			s.evaluated(*closed)
		}
	}, true, nil
}

// tag is a pending marker's value: the round and item of its bid.
func (s *Store) tag(round uint64, id string) string { return strconv.FormatUint(round, 10) + ":" + id }

// write is one conditional transaction on an item: it commits only if
// the row, the owner key and the window key are as read.
type write struct {
	s    *Store
	sn   *snap
	ls   *leases
	cmps []clientv3.Cmp
	ops  []clientv3.Op
	auc  []clientv3.Op // the window key's put or delete, at most one
	uses []string      // leases the ops attach keys to
}

func (w *write) commit(ctx context.Context, op string) (bool, error) {
	s, sn := w.s, w.sn
	b, _ := json.Marshal(&sn.r)
	cmps := append([]clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(s.rowKey(sn.id)), "=", sn.rowRev),
		clientv3.Compare(clientv3.ModRevision(s.ownKey(sn.id)), "=", modOf(sn.own)),
		clientv3.Compare(clientv3.ModRevision(s.aucKey(sn.id)), "=", modOf(sn.auc)),
	}, w.cmps...)
	ops := append(append([]clientv3.Op{clientv3.OpPut(s.rowKey(sn.id), string(b))}, w.ops...), w.auc...)
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, fmt.Errorf("lease/etcd: %s %q: %w", op, sn.id, err)
	}
	if resp.Succeeded {
		for _, u := range w.uses {
			w.ls.used[u] = true
		}
	}
	return resp.Succeeded, nil
}

// close closes the open auction of w's snapshot if it is due, adding its
// writes to w, and returns the evaluation. The pending markers of the
// round's bidders are deleted, but for except's, which the bid closing the
// auction did not write.
func (s *Store) close(ctx context.Context, w *write, except string) (lease.AuctionResult, error) {
	sn := w.sn
	r := &sn.r
	res := lease.AuctionResult{Item: sn.id, Unleased: r.Unleased}
	if !r.Open {
		return res, nil
	}
	res.Round, res.Bids, res.Deadline = r.Round, len(r.Bids), time.Unix(0, r.Deadline)
	timed := sn.windowPassed()
	th := s.threshold(sn)
	res.Threshold = th
	short := th > 0 && len(r.Bids) >= th
	if !timed && !short {
		res.Outcome = lease.NotDue
		return res, nil
	}
	res.ShortCircuited, res.TimedOut = short && !timed, timed
	live := map[string]bool{}
	if s.cfg.LiveBiddersOnly && len(r.Bids) > 0 {
		var err error
		if live, err = s.liveOf(ctx, r.Bids); err != nil {
			return res, fmt.Errorf("lease/etcd: evaluate %q: %w", sn.id, err)
		}
	}
	tag := s.tag(r.Round, sn.id)
	best := -1
	seen := map[string]bool{except: true}
	for i, b := range r.Bids {
		// Delete the bidder's marker if it is this round's (once: a node
		// whose marker expired may have bid twice in a long round).
		if pk := s.pendKey(b.Node); !seen[b.Node] {
			seen[b.Node] = true
			w.ops = append(w.ops, clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.Value(pk), "=", tag)},
				[]clientv3.Op{clientv3.OpDelete(pk)}, nil))
		}
		if b.Free < r.MinBid || (s.cfg.LiveBiddersOnly && !live[b.Node]) {
			continue
		}
		if best < 0 || b.Free > r.Bids[best].Free { // earlier wins ties
			best = i
		}
	}
	if w.auc = nil; sn.auc != nil {
		w.auc = []clientv3.Op{clientv3.OpDelete(s.aucKey(sn.id))}
	}
	r.Open, r.Deadline = false, 0
	bids := r.Bids
	r.Bids = nil
	if best < 0 || sn.held() {
		r.Unleased++
		res.Outcome, res.Unleased = lease.NoWinner, r.Unleased
		res.Starved = r.Unleased >= s.cfg.StarveAfter
		return res, nil
	}
	lid, t0, err := w.ls.get(ctx, "grant", s.ttl)
	if err != nil {
		return res, fmt.Errorf("lease/etcd: evaluate %q: %w", sn.id, err)
	}
	exp := t0.Add(s.cfg.TTL)
	r.Fence++
	r.Owner, r.State, r.Ready, r.Unleased = bids[best].Node, uint8(lease.Leased), false, 0
	w.ops = append(w.ops, clientv3.OpPut(s.ownKey(sn.id), ownValue(r.Owner, r.Fence), clientv3.WithLease(lid)))
	if !s.cfg.OmitRowExpiry {
		w.ops = append(w.ops, clientv3.OpPut(s.expKey(sn.id), strconv.FormatInt(exp.UnixNano(), 10), clientv3.WithLease(lid)))
	}
	w.uses = append(w.uses, "grant")
	res.Outcome, res.Unleased = lease.Granted, 0
	res.Grant = &lease.Grant{
		Ref:    lease.Ref{Item: sn.id, Holder: r.Owner, Fence: lease.Fence(r.Fence)},
		Expiry: exp, TTL: s.cfg.TTL, Round: res.Round, Bids: res.Bids,
	}
	return res, nil
}

// liveOf reads which of the bidders have a live node key.
func (s *Store) liveOf(ctx context.Context, bids []bid) (map[string]bool, error) {
	live := map[string]bool{}
	for i := 0; i < len(bids); i += chunk {
		part := bids[i:min(len(bids), i+chunk)]
		ops := make([]clientv3.Op, len(part))
		for j, b := range part {
			ops[j] = clientv3.OpGet(s.nodeKey(b.Node), clientv3.WithCountOnly())
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		for j, b := range part {
			if resp.Responses[j].GetResponseRange().Count > 0 {
				live[b.Node] = true
			}
		}
	}
	return live, nil
}

// evaluated calls the hooks of a closing evaluation.
func (s *Store) evaluated(r lease.AuctionResult) { s.cfg.Hooks.Evaluated(r) }

// Evaluate implements [lease.Store].
func (s *Store) Evaluate(ctx context.Context, id string) (lease.AuctionResult, error) {
	if err := s.begin(ctx, "evaluate"); err != nil {
		return lease.AuctionResult{}, err
	}
	ls := s.newLeases()
	defer ls.done()
	for range maxAttempts {
		sn, err := s.read(ctx, id, "", s.cfg.DynamicMaxBids)
		if err != nil {
			return lease.AuctionResult{}, fmt.Errorf("lease/etcd: evaluate %q: %w", id, err)
		}
		if !sn.exists {
			return lease.AuctionResult{}, s.notFound(id)
		}
		w := &write{s: s, sn: sn, ls: ls}
		r, err := s.close(ctx, w, "")
		if err != nil {
			return lease.AuctionResult{}, err
		}
		if r.Outcome == lease.NoAuction || r.Outcome == lease.NotDue {
			return r, nil
		}
		ok, err := w.commit(ctx, "evaluate")
		if err != nil {
			return lease.AuctionResult{}, err
		}
		if ok {
			s.evaluated(r)
			return r, nil
		}
	}
	return lease.AuctionResult{}, s.contention("evaluate", id)
}

// refErr is the owner check of ref against a snapshot.
func (s *Store) refErr(sn *snap, ref lease.Ref) error {
	switch {
	case !sn.exists:
		return s.notFound(ref.Item)
	case uint64(ref.Fence) < sn.r.Fence:
		return fmt.Errorf("lease/etcd: %q fence %d, newest %d: %w", ref.Item, ref.Fence, sn.r.Fence, lease.ErrStaleFence)
	case uint64(ref.Fence) > sn.r.Fence || !sn.held() || sn.r.Owner != ref.Holder:
		return fmt.Errorf("lease/etcd: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
	}
	return nil
}

// Renew implements [lease.Store]. It checks each ref and writes its new
// expiry in transactions that compare the owner key with the ref (one
// round trip for up to 40 refs, nested transactions per ref, up to 8
// such transactions at once), then keeps each live grant's etcd lease
// alive (keep-alives on long-lived streams, a large batch spread over
// several). With [lease.WithoutRowExpiry] the check is a read of the
// owner keys and nothing is written; the refs whose check failed are read
// again, in one read after the keep-alives, to say why. The expiry
// reported is the client's
// time before the transaction was sent plus the TTL: the etcd lease,
// renewed after that, lasts at least as long.
func (s *Store) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	if err := s.begin(ctx, "renew"); err != nil {
		return nil, err
	}
	out := make([]lease.Renewal, len(refs))
	// Up to 40 refs per transaction (three ops each), and no item twice
	// in one: etcd refuses a transaction that writes a key twice. The
	// transactions run at once, up to renewParallel of them: one after
	// the other, a holder of hundreds of leases on a store behind on its
	// applies took longer than its leases' margin to renew them.
	const per = 40
	var spans [][2]int
	for i := 0; i < len(refs); {
		j, items := i, map[string]bool{}
		for j < len(refs) && j-i < per && !items[refs[j].Item] {
			items[refs[j].Item] = true
			j++
		}
		spans = append(spans, [2]int{i, j})
		i = j
	}
	errs := make([]error, len(spans))
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	for k, sp := range spans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[k] = s.renew(ctx, refs[sp[0]:sp[1]], out[sp[0]:sp[1]])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renewParallel bounds the transactions of one Renew in flight.
const renewParallel = 8

func (s *Store) renew(ctx context.Context, refs []lease.Ref, out []lease.Renewal) error {
	t0 := time.Now()
	exp := t0.Add(s.cfg.TTL)
	var keep []alive
	var failed []int
	var err error
	if s.cfg.OmitRowExpiry {
		keep, failed, err = s.checkOwners(ctx, refs, out)
	} else {
		keep, err = s.writeExpiries(ctx, refs, out, strconv.FormatInt(exp.UnixNano(), 10))
	}
	if err != nil {
		return err
	}
	if err := s.keepAlive(ctx, refs, out, keep, exp); err != nil {
		return err
	}
	if len(failed) > 0 {
		return s.explain(ctx, refs, out, failed)
	}
	return nil
}

// keepAlive keeps the etcd leases of keep alive and sets their renewals:
// expiry exp, or ErrNotHeld for a lease etcd no longer has.
func (s *Store) keepAlive(ctx context.Context, refs []lease.Ref, out []lease.Renewal, keep []alive, exp time.Time) error {
	if len(keep) == 0 {
		return nil
	}
	ids := make([]clientv3.LeaseID, len(keep))
	for j, a := range keep {
		ids[j] = a.id
	}
	ttls, err := s.ka.renew(ctx, ids)
	if err != nil {
		return fmt.Errorf("lease/etcd: renew: %w", err)
	}
	for j, a := range keep {
		ref := refs[a.i]
		if ttls[j] > 0 {
			out[a.i].Expiry, out[a.i].TTL = exp, s.cfg.TTL
			continue
		}
		out[a.i].Err = fmt.Errorf("lease/etcd: %q by %q fence %d: lease expired: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
	}
	return nil
}

// alive is a ref (by index) whose owner key names it, and the etcd lease
// its owner key is on.
type alive struct {
	i  int
	id clientv3.LeaseID
}

// writeExpiries checks each ref against its owner key and writes its
// expiry key, in one transaction of nested ones: a write per lease.
func (s *Store) writeExpiries(ctx context.Context, refs []lease.Ref, out []lease.Renewal, ev string) ([]alive, error) {
	ops := make([]clientv3.Op, len(refs))
	for i, ref := range refs {
		ok := s.ownKey(ref.Item)
		ops[i] = clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(ok), "=", ownValue(ref.Holder, uint64(ref.Fence)))},
			[]clientv3.Op{clientv3.OpPut(s.expKey(ref.Item), ev, clientv3.WithIgnoreLease()), clientv3.OpGet(ok)},
			[]clientv3.Op{clientv3.OpGet(s.rowKey(ref.Item)), clientv3.OpGet(ok)})
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("lease/etcd: renew: %w", err)
	}
	var keep []alive
	for i, ref := range refs {
		out[i].Ref = ref
		tr := resp.Responses[i].GetResponseTxn()
		g := func(j int) *clientv3.GetResponse { return (*clientv3.GetResponse)(tr.Responses[j].GetResponseRange()) }
		if tr.Succeeded {
			k := kvOf(g(1))
			if k == nil { // cannot happen: the compare saw it
				out[i].Err = fmt.Errorf("lease/etcd: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
				continue
			}
			keep = append(keep, alive{i, clientv3.LeaseID(k.lease)})
			continue
		}
		sn, err := ownerSnap(ref.Item, g(0), g(1))
		if err != nil {
			return nil, fmt.Errorf("lease/etcd: renew %w", err)
		}
		out[i].Err = s.notHeld(sn, ref)
	}
	return keep, nil
}

// checkOwners checks each ref against its owner key with one read (no
// raft write: [lease.WithoutRowExpiry]). It returns the refs that hold and
// the indexes of those that do not, which explain reads again after the
// keep-alives: a renewal must not wait on why another failed.
func (s *Store) checkOwners(ctx context.Context, refs []lease.Ref, out []lease.Renewal) (keep []alive, failed []int, err error) {
	ops := make([]clientv3.Op, len(refs))
	for i, ref := range refs {
		ops[i] = clientv3.OpGet(s.ownKey(ref.Item))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("lease/etcd: renew: %w", err)
	}
	for i, ref := range refs {
		out[i].Ref = ref
		k := kvOf((*clientv3.GetResponse)(resp.Responses[i].GetResponseRange()))
		if k != nil && string(k.val) == ownValue(ref.Holder, uint64(ref.Fence)) {
			keep = append(keep, alive{i, clientv3.LeaseID(k.lease)})
			continue
		}
		failed = append(failed, i)
	}
	return keep, failed, nil
}

// explain sets the errors of the refs at failed (their owner check
// failed) from one read of their rows and owner keys; if that read fails,
// each is ErrNotHeld with the read's error in its text.
func (s *Store) explain(ctx context.Context, refs []lease.Ref, out []lease.Renewal, failed []int) error {
	ops := make([]clientv3.Op, 0, 2*len(failed))
	for _, i := range failed {
		ops = append(ops, clientv3.OpGet(s.rowKey(refs[i].Item)), clientv3.OpGet(s.ownKey(refs[i].Item)))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		// The owner checks failed: not held, whatever the finer reason.
		for _, i := range failed {
			ref := refs[i]
			out[i].Err = fmt.Errorf("lease/etcd: %q by %q fence %d (reading why: %v): %w", ref.Item, ref.Holder, ref.Fence, err, lease.ErrNotHeld)
		}
		return nil
	}
	for j, i := range failed {
		g := func(k int) *clientv3.GetResponse {
			return (*clientv3.GetResponse)(resp.Responses[2*j+k].GetResponseRange())
		}
		sn, err := ownerSnap(refs[i].Item, g(0), g(1))
		if err != nil {
			return fmt.Errorf("lease/etcd: renew %w", err)
		}
		out[i].Err = s.notHeld(sn, refs[i])
	}
	return nil
}

// ownerSnap is what an owner check needs of item: its row and its owner
// key, as read by row and own.
func ownerSnap(item string, row, own *clientv3.GetResponse) (*snap, error) {
	sn := &snap{id: item, own: kvOf(own)}
	if k := kvOf(row); k != nil {
		if err := json.Unmarshal(k.val, &sn.r); err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		sn.exists = true
	}
	return sn, nil
}

// notHeld is the error of a renewal whose owner check failed: the
// owner check of ref against sn, or ErrNotHeld if sn (read after the
// check) names ref again.
func (s *Store) notHeld(sn *snap, ref lease.Ref) error {
	if err := s.refErr(sn, ref); err != nil {
		return err
	}
	return fmt.Errorf("lease/etcd: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
}

// Release implements [lease.Store]: it deletes the owner key if it names
// ref, and revokes the grant's etcd lease.
func (s *Store) Release(ctx context.Context, ref lease.Ref) error {
	if err := s.begin(ctx, "release"); err != nil {
		return err
	}
	ok := s.ownKey(ref.Item)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(ok), "=", ownValue(ref.Holder, uint64(ref.Fence)))).
		Then(clientv3.OpGet(ok), clientv3.OpDelete(ok), clientv3.OpDelete(s.expKey(ref.Item))).
		Else(clientv3.OpGet(s.rowKey(ref.Item)), clientv3.OpGet(ok)).Commit()
	if err != nil {
		return fmt.Errorf("lease/etcd: release %q: %w", ref.Item, err)
	}
	g := func(j int) *clientv3.GetResponse {
		return (*clientv3.GetResponse)(resp.Responses[j].GetResponseRange())
	}
	if resp.Succeeded {
		if k := kvOf(g(0)); k != nil && k.lease != 0 {
			_, _ = s.cli.Revoke(ctx, clientv3.LeaseID(k.lease))
		}
		return nil
	}
	sn, err := ownerSnap(ref.Item, g(0), g(1))
	if err != nil {
		return fmt.Errorf("lease/etcd: release %w", err)
	}
	if err := s.refErr(sn, ref); err != nil {
		return err
	}
	return fmt.Errorf("lease/etcd: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
}

// Update implements [lease.Store].
func (s *Store) Update(ctx context.Context, ref lease.Ref, m lease.Mutation) (lease.Row, error) {
	if m.Size != nil && *m.Size < 0 {
		return lease.Row{}, fmt.Errorf("lease/etcd: update %q: size %d: %w", ref.Item, *m.Size, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "update"); err != nil {
		return lease.Row{}, err
	}
	for range maxAttempts {
		sn, err := s.read(ctx, ref.Item, "", false)
		if err != nil {
			return lease.Row{}, fmt.Errorf("lease/etcd: update %q: %w", ref.Item, err)
		}
		if err := s.refErr(sn, ref); err != nil {
			return lease.Row{}, err
		}
		r := &sn.r
		if m.IfVersion != nil && *m.IfVersion != r.Version {
			return lease.Row{}, fmt.Errorf("lease/etcd: update %q: version %d, want %d: %w", ref.Item, r.Version, *m.IfVersion, lease.ErrVersionConflict)
		}
		if m.Commit != nil {
			r.Commit = *m.Commit
		}
		if m.Ready != nil {
			r.Ready = *m.Ready
		}
		if m.Size != nil {
			r.Size, r.MinBid = *m.Size, s.cfg.MinBidFor(*m.Size)
		}
		if m.LastIndexed != nil {
			r.Last, r.LastSet = m.LastIndexed.UnixNano(), true
		}
		if m.Draining {
			r.State = uint8(lease.Draining)
		}
		r.Version++
		w := &write{s: s, sn: sn, ls: nil}
		ok, err := w.commit(ctx, "update")
		if err != nil {
			return lease.Row{}, err
		}
		if ok {
			return sn.public(), nil
		}
	}
	return lease.Row{}, s.contention("update", ref.Item)
}

func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound)
}

// Close implements [lease.Store]. It does not close the client, which the
// caller owns, and leaves the keys in etcd. Every later call returns an
// error wrapping [lease.ErrClosed]; a running Watch ends with it.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		close(s.done)
	}
	return nil
}

// ReportsRowExpiry implements [lease.RowExpiryReporter]: leased rows
// carry Expiry unless the store was made with [lease.WithoutRowExpiry].
func (s *Store) ReportsRowExpiry() bool { return !s.cfg.OmitRowExpiry }

// ReportsLapses implements [lease.LapseReporter]: the end of a grant's
// etcd lease deletes its owner key, which Watch follows.
func (s *Store) ReportsLapses() bool { return true }

// Rows implements [lease.Lister].
func (s *Store) Rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	return s.rows(ctx)
}
