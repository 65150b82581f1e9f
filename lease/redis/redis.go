package redis

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/indexkit/indexkit/lease"
)

// MaxFree is the largest free-memory offer a bid may carry: Lua numbers
// are doubles, exact up to 2^53 (8 PiB).
const MaxFree = 1 << 53

// Store is a [lease.Store] on Redis. Create it with [New].
type Store struct {
	rdb    goredis.UniversalClient
	prefix string
	cfg    lease.Config
	cfgArg []any // ARGV[1..9] of the auction scripts; ARGV[4] from maxBids
	// maxBids is the static short-circuit threshold sent as ARGV[4], which
	// SetMaxBids changes while the store runs.
	maxBids atomic.Int64
	closed  atomic.Bool
}

var (
	_ lease.Store         = (*Store)(nil)
	_ lease.LiveCounter   = (*Store)(nil)
	_ lease.Lister        = (*Store)(nil)
	_ lease.MaxBidsSetter = (*Store)(nil)
)

// New returns a store that keeps its keys under prefix on rdb, configured
// by opts (see [lease.NewConfig]; the Clock option is ignored: the Redis
// server's clock is the only clock). The caller owns rdb: Close does not
// close it. prefix must not be empty; use one per catalog, such as
// "fleet:". New starts nothing and makes no request.
//
// rdb should not retry commands (go-redis: MaxRetries -1; it retries 3
// times by default): a script whose reply is lost with its connection
// runs again when retried, and answers as a second run does (see
// "Faults" in the package documentation).
func New(rdb goredis.UniversalClient, prefix string, opts ...lease.Option) (*Store, error) {
	cfg, err := lease.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %w", err)
	}
	if rdb == nil || prefix == "" {
		return nil, fmt.Errorf("lease/redis: nil client or empty prefix: %w", lease.ErrInvalidOption)
	}
	pend := cfg.AuctionWindow + cfg.PendingGrace
	pendMs := (pend + time.Millisecond - 1) / time.Millisecond
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	var guard int64
	if cfg.LossGuard {
		guard = us(cfg.TTL)
	}
	st := &Store{
		rdb:    rdb,
		prefix: prefix,
		cfg:    cfg,
		cfgArg: []any{
			us(cfg.TTL), us(cfg.AuctionWindow), int64(pendMs), cfg.MaxBids,
			b2i(cfg.DynamicMaxBids), us(cfg.LivenessWindow), b2i(cfg.LiveBiddersOnly), prefix, guard,
		},
	}
	st.maxBids.Store(int64(cfg.MaxBids))
	return st, nil
}

// SetMaxBids implements [lease.MaxBidsSetter]: the static short-circuit
// threshold ([lease.WithMaxBids]) becomes n (0: none) for every later Bid
// and Evaluate through this Store, which send it with each script call.
// Other Store values on the same keys keep their own.
func (s *Store) SetMaxBids(n int) error {
	if n < 0 {
		return fmt.Errorf("lease/redis: set max bids %d: %w", n, lease.ErrInvalid)
	}
	if s.closed.Load() {
		return fmt.Errorf("lease/redis: set max bids: %w", lease.ErrClosed)
	}
	s.maxBids.Store(int64(n))
	return nil
}

func us(d time.Duration) int64 { return max(1, d.Microseconds()) }

// The key layout; see the package documentation.
func (s *Store) rowKey(item string) string     { return s.prefix + "{" + item + "}:row" }
func (s *Store) bidsKey(item string) string    { return s.prefix + "{" + item + "}:bids" }
func (s *Store) pendingKey(node string) string { return s.prefix + "{node:" + node + "}:pending" }
func (s *Store) nodesKey() string              { return s.prefix + "nodes" }
func (s *Store) itemsKey() string              { return s.prefix + "items" }
func (s *Store) feedKey() string               { return s.prefix + "changes" }
func (s *Store) seqKey() string                { return s.prefix + "changes:seq" }

func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("lease/redis: %s: %w", op, lease.ErrClosed)
	}
	return nil
}

func (s *Store) run(ctx context.Context, sc *goredis.Script, op string, keys []string, args ...any) ([]any, error) {
	v, err := sc.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	return v, nil
}

func (s *Store) args(extra ...any) []any {
	a := append(append(make([]any, 0, len(s.cfgArg)+len(extra)), s.cfgArg...), extra...)
	a[3] = s.maxBids.Load()
	return a
}

// Put implements [lease.Store].
func (s *Store) Put(ctx context.Context, it lease.Item) error {
	if it.ID == "" || it.Size < 0 || it.MinBid < 0 || it.MaxBids < 0 {
		return fmt.Errorf("lease/redis: put %q: %w", it.ID, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "put"); err != nil {
		return err
	}
	// The items set is in another cluster slot than the row, so it is
	// written by its own command, first: a Put that fails after it leaves
	// an ID whose row is missing, which Rows skips.
	if err := s.rdb.SAdd(ctx, s.itemsKey(), it.ID).Err(); err != nil {
		return fmt.Errorf("lease/redis: put %q: %w", it.ID, err)
	}
	keys := []string{s.rowKey(it.ID), s.bidsKey(it.ID), s.feedKey(), s.seqKey()}
	err := putScript.Run(ctx, s.rdb, keys, it.Commit, it.Size, it.MaxBids, it.MinBid, it.ID).Err()
	if err != nil {
		return fmt.Errorf("lease/redis: put %q: %w", it.ID, err)
	}
	return nil
}

// Get implements [lease.Store].
func (s *Store) Get(ctx context.Context, id string) (lease.Row, error) {
	if err := s.begin(ctx, "get"); err != nil {
		return lease.Row{}, err
	}
	v, err := s.run(ctx, getScript, "get", []string{s.rowKey(id), s.bidsKey(id)})
	if err != nil {
		return lease.Row{}, err
	}
	if len(v) == 0 {
		return lease.Row{}, fmt.Errorf("lease/redis: item %q: %w", id, lease.ErrNotFound)
	}
	return parseRow(id, v), nil
}

// rowsBatch is how many item IDs Rows reads with one SSCAN and then reads
// the rows of in one pipeline.
const rowsBatch = 256

// Rows implements [lease.Lister]. It walks the items set with SSCAN, a
// batch at a time, and reads each batch's rows in one pipelined round
// trip, so a catalog of any size is listed without KEYS and in bounded
// memory. As with SSCAN, an item put or deleted during the walk may or may
// not be listed; every item present for the whole walk is listed once.
func (s *Store) Rows(ctx context.Context) iter.Seq2[lease.Row, error] {
	return func(yield func(lease.Row, error) bool) {
		if err := s.begin(ctx, "rows"); err != nil {
			yield(lease.Row{}, err)
			return
		}
		seen := make(map[string]struct{})
		var cursor uint64
		for {
			ids, next, err := s.rdb.SScan(ctx, s.itemsKey(), cursor, "", rowsBatch).Result()
			if err != nil {
				yield(lease.Row{}, fmt.Errorf("lease/redis: rows: %w", err))
				return
			}
			// SSCAN may return an element more than once.
			fresh := ids[:0]
			for _, id := range ids {
				if _, ok := seen[id]; !ok {
					seen[id] = struct{}{}
					fresh = append(fresh, id)
				}
			}
			rows, err := s.getMany(ctx, fresh)
			if err != nil {
				yield(lease.Row{}, err)
				return
			}
			for _, r := range rows {
				if !yield(r, nil) {
					return
				}
			}
			if cursor = next; cursor == 0 {
				return
			}
		}
	}
}

// getMany reads the rows of ids in one pipeline, skipping IDs without a
// row.
func (s *Store) getMany(ctx context.Context, ids []string) ([]lease.Row, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// Plain HGETALLs and one TIME after them, pipelined: no script, as a
	// listing is a snapshot that every later action re-checks in its own
	// script. TIME comes after the reads, so a lease reported held had
	// not lapsed when it was read, and one that lapsed before TIME (and so
	// can no longer be renewed) is reported idle.
	pipe := s.rdb.Pipeline()
	hs := make([]*goredis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		hs[i] = pipe.HGetAll(ctx, s.rowKey(id))
	}
	tm := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("lease/redis: rows: %w", err)
	}
	now := tm.Val().UnixMicro()
	// The bids of open auctions, in a second round trip: few rows have one.
	var open []int
	bids := make([]*goredis.IntCmd, len(ids))
	for i, h := range hs {
		if h.Val()["open"] == "1" {
			open = append(open, i)
		}
	}
	if len(open) > 0 {
		pipe := s.rdb.Pipeline()
		for _, i := range open {
			bids[i] = pipe.LLen(ctx, s.bidsKey(ids[i]))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("lease/redis: rows: %w", err)
		}
	}
	rows := make([]lease.Row, 0, len(ids))
	for i, id := range ids {
		f := hs[i].Val()
		if len(f) == 0 { // a missing row (a Put that failed after SADD) is skipped
			continue
		}
		var nb int64
		if bids[i] != nil {
			nb = bids[i].Val()
		}
		rows = append(rows, rowFromFields(id, now, nb, f))
	}
	return rows, nil
}

// parseRow reads {now µs, bids, field, value, ...} (getScript's reply)
// into a row.
func parseRow(id string, v []any) lease.Row {
	f := make(map[string]string, (len(v)-2)/2)
	for i := 2; i+1 < len(v); i += 2 {
		k, _ := v[i].(string)
		x, _ := v[i+1].(string)
		f[k] = x
	}
	return rowFromFields(id, toInt(v[0]), toInt(v[1]), f)
}

// rowFromFields makes a row of the fields of its hash, with nbids bids in
// its auction, applying the lapse of a lease expired at now (µs).
func rowFromFields(id string, now, nbids int64, f map[string]string) lease.Row {
	num := func(k string) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
	r := lease.Row{
		Item: lease.Item{
			ID: id, Commit: f["commit"], Size: num("size"), MaxBids: int(num("maxbids")), MinBid: num("minbid"),
		},
		Owner:    f["owner"],
		Fence:    lease.Fence(num("fence")),
		State:    lease.State(num("state")),
		Version:  uint64(num("version")),
		Ready:    f["ready"] == "1",
		Round:    uint64(num("round")),
		Unleased: int(num("unleased")),
	}
	if exp := num("exp"); r.Owner != "" {
		if now >= exp {
			r.Owner, r.State, r.Ready = "", lease.Idle, false
		} else {
			r.Expiry = time.UnixMicro(exp)
		}
	}
	if ns := num("last"); f["last"] != "" {
		r.LastIndexed = time.Unix(0, ns)
	}
	if f["open"] == "1" {
		r.Bids = int(nbids)
		r.AuctionDeadline = time.UnixMicro(num("deadline"))
	}
	return r
}

func toInt(x any) int64 {
	switch v := x.(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// Heartbeat implements [lease.Store].
func (s *Store) Heartbeat(ctx context.Context, node string) error {
	if node == "" {
		return fmt.Errorf("lease/redis: heartbeat: empty node: %w", lease.ErrInvalid)
	}
	if err := s.begin(ctx, "heartbeat"); err != nil {
		return err
	}
	if err := heartbeatScript.Run(ctx, s.rdb, []string{s.nodesKey()}, node, us(s.cfg.LivenessWindow)).Err(); err != nil {
		return fmt.Errorf("lease/redis: heartbeat %q: %w", node, err)
	}
	return nil
}

// LiveNodes implements [lease.LiveCounter].
func (s *Store) LiveNodes(ctx context.Context) (int, error) {
	if err := s.begin(ctx, "live nodes"); err != nil {
		return 0, err
	}
	n, err := liveScript.Run(ctx, s.rdb, []string{s.nodesKey()}, us(s.cfg.LivenessWindow)).Int()
	if err != nil {
		return 0, fmt.Errorf("lease/redis: live nodes: %w", err)
	}
	return n, nil
}

func (s *Store) reject(id, node string, reason error) error {
	if h := s.cfg.Hooks.BidRejected; h != nil {
		h(id, node, reason)
	}
	return fmt.Errorf("lease/redis: bid on %q by %q: %w", id, node, reason)
}

// Bid implements [lease.Store]. Offers above [MaxFree] are refused with
// lease.ErrInvalid.
func (s *Store) Bid(ctx context.Context, id, node string, free int64) (lease.BidResult, error) {
	if id == "" || node == "" || free < 0 || free > MaxFree {
		return lease.BidResult{}, fmt.Errorf("lease/redis: bid on %q by %q: %w", id, node, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "bid"); err != nil {
		return lease.BidResult{}, err
	}
	keys := []string{s.rowKey(id), s.bidsKey(id), s.nodesKey(), s.pendingKey(node), s.feedKey(), s.seqKey()}
	v, err := s.run(ctx, bidScript, "bid", keys, s.args(id, node, free)...)
	if err != nil {
		return lease.BidResult{}, err
	}
	switch toInt(v[0]) {
	case codeNotFound:
		return lease.BidResult{}, fmt.Errorf("lease/redis: item %q: %w", id, lease.ErrNotFound)
	case codeLeased:
		return lease.BidResult{}, s.reject(id, node, lease.ErrLeased)
	case codeTooLow:
		return lease.BidResult{}, s.reject(id, node, lease.ErrBidTooLow)
	case codePending:
		return lease.BidResult{}, s.reject(id, node, lease.ErrBidPending)
	case codeClosed:
		s.evaluated(s.result(id, v[6:]))
		return lease.BidResult{}, s.reject(id, node, lease.ErrAuctionClosed)
	}
	res := lease.BidResult{Round: uint64(toInt(v[2])), Seq: uint64(toInt(v[3])), Bids: int(toInt(v[4]))}
	h := s.cfg.Hooks
	if toInt(v[1]) == 1 && h.AuctionStarted != nil {
		h.AuctionStarted(id, res.Round)
	}
	if h.BidPlaced != nil {
		h.BidPlaced(id, node, free)
	}
	if toInt(v[5]) == 1 {
		r := s.result(id, v[6:])
		s.evaluated(r)
		res.Result = &r
	}
	return res, nil
}

// result reads an evaluation {outcome, round, winner, fence, expiry, bids,
// unleased, short, timedout, deadline, threshold}.
func (s *Store) result(id string, e []any) lease.AuctionResult {
	r := lease.AuctionResult{
		Item:     id,
		Outcome:  lease.Outcome(toInt(e[0])),
		Round:    uint64(toInt(e[1])),
		Bids:     int(toInt(e[5])),
		Unleased: int(toInt(e[6])),
	}
	if r.Outcome == lease.NoAuction {
		return r
	}
	r.Deadline = time.UnixMicro(toInt(e[9]))
	if len(e) > 10 {
		r.Threshold = int(toInt(e[10]))
	}
	r.ShortCircuited, r.TimedOut = toInt(e[7]) == 1, toInt(e[8]) == 1
	switch r.Outcome {
	case lease.Granted:
		winner, _ := e[2].(string)
		r.Grant = &lease.Grant{
			Ref:    lease.Ref{Item: id, Holder: winner, Fence: lease.Fence(toInt(e[3]))},
			Expiry: time.UnixMicro(toInt(e[4])), TTL: s.cfg.TTL, Round: r.Round, Bids: r.Bids,
		}
	case lease.NoWinner:
		r.Starved = r.Unleased >= s.cfg.StarveAfter
	}
	return r
}

// evaluated calls the hooks of a closing evaluation.
func (s *Store) evaluated(r lease.AuctionResult) { s.cfg.Hooks.Evaluated(r) }

// Evaluate implements [lease.Store].
func (s *Store) Evaluate(ctx context.Context, id string) (lease.AuctionResult, error) {
	if err := s.begin(ctx, "evaluate"); err != nil {
		return lease.AuctionResult{}, err
	}
	keys := []string{s.rowKey(id), s.bidsKey(id), s.nodesKey(), s.feedKey(), s.seqKey()}
	v, err := s.run(ctx, evaluateScript, "evaluate", keys, s.args(id)...)
	if err != nil {
		return lease.AuctionResult{}, err
	}
	if toInt(v[0]) == codeNotFound {
		return lease.AuctionResult{}, fmt.Errorf("lease/redis: item %q: %w", id, lease.ErrNotFound)
	}
	r := s.result(id, v[1:])
	s.evaluated(r)
	return r, nil
}

// refErr turns an owner-check code into an error.
func refErr(code int64, ref lease.Ref) error {
	switch code {
	case codeOK:
		return nil
	case codeNotFound:
		return fmt.Errorf("lease/redis: item %q: %w", ref.Item, lease.ErrNotFound)
	case codeStale:
		return fmt.Errorf("lease/redis: %q fence %d: %w", ref.Item, ref.Fence, lease.ErrStaleFence)
	case codeNotHeld:
		return fmt.Errorf("lease/redis: %q by %q fence %d: %w", ref.Item, ref.Holder, ref.Fence, lease.ErrNotHeld)
	case codeVersion:
		return fmt.Errorf("lease/redis: update %q: %w", ref.Item, lease.ErrVersionConflict)
	}
	return fmt.Errorf("lease/redis: %q: unexpected script code %d", ref.Item, code)
}

// Renew implements [lease.Store]. All refs are renewed by one script call,
// one round trip.
func (s *Store) Renew(ctx context.Context, refs ...lease.Ref) ([]lease.Renewal, error) {
	if err := s.begin(ctx, "renew"); err != nil {
		return nil, err
	}
	out := make([]lease.Renewal, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	keys := make([]string, len(refs))
	args := make([]any, 1, 1+2*len(refs))
	args[0] = us(s.cfg.TTL)
	for i, ref := range refs {
		keys[i] = s.rowKey(ref.Item)
		args = append(args, ref.Holder, uint64(ref.Fence))
	}
	v, err := s.run(ctx, renewScript, "renew", keys, args...)
	if err != nil {
		return nil, err
	}
	if len(v) != 2*len(refs) {
		return nil, fmt.Errorf("lease/redis: renew: %d values for %d refs", len(v), len(refs))
	}
	for i, ref := range refs {
		out[i].Ref = ref
		if out[i].Err = refErr(toInt(v[2*i]), ref); out[i].Err == nil {
			out[i].Expiry, out[i].TTL = time.UnixMicro(toInt(v[2*i+1])), s.cfg.TTL
		}
	}
	return out, nil
}

// Release implements [lease.Store].
func (s *Store) Release(ctx context.Context, ref lease.Ref) error {
	if err := s.begin(ctx, "release"); err != nil {
		return err
	}
	keys := []string{s.rowKey(ref.Item), s.bidsKey(ref.Item), s.feedKey(), s.seqKey()}
	v, err := s.run(ctx, releaseScript, "release", keys, ref.Holder, uint64(ref.Fence), ref.Item)
	if err != nil {
		return err
	}
	return refErr(toInt(v[0]), ref)
}

// Update implements [lease.Store].
func (s *Store) Update(ctx context.Context, ref lease.Ref, m lease.Mutation) (lease.Row, error) {
	if m.Size != nil && *m.Size < 0 {
		return lease.Row{}, fmt.Errorf("lease/redis: update %q: size %d: %w", ref.Item, *m.Size, lease.ErrInvalid)
	}
	if err := s.begin(ctx, "update"); err != nil {
		return lease.Row{}, err
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	var commit, ready, size, last, ifv, minBid string
	if m.Commit != nil {
		commit = *m.Commit
	}
	if m.Ready != nil {
		ready = flag(*m.Ready)
	}
	if m.Size != nil {
		size = strconv.FormatInt(*m.Size, 10)
		minBid = strconv.FormatInt(s.cfg.MinBidFor(*m.Size), 10)
	}
	if m.LastIndexed != nil {
		last = strconv.FormatInt(m.LastIndexed.UnixNano(), 10)
	}
	if m.IfVersion != nil {
		ifv = strconv.FormatUint(*m.IfVersion, 10)
	}
	args := []any{
		ref.Holder, uint64(ref.Fence),
		flag(m.Commit != nil), commit, flag(m.Ready != nil), ready,
		flag(m.Size != nil), size, flag(m.LastIndexed != nil), last,
		flag(m.IfVersion != nil), ifv, minBid, flag(m.Draining), ref.Item,
	}
	keys := []string{s.rowKey(ref.Item), s.bidsKey(ref.Item), s.feedKey(), s.seqKey()}
	v, err := s.run(ctx, updateScript, "update", keys, args...)
	if err != nil {
		return lease.Row{}, err
	}
	if err := refErr(toInt(v[0]), ref); err != nil {
		return lease.Row{}, err
	}
	return parseRow(ref.Item, v[1:]), nil
}

// Close implements [lease.Store]. It does not close the client, which the
// caller owns, and leaves the keys in Redis. Every later call returns an
// error wrapping [lease.ErrClosed].
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
