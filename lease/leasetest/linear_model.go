package leasetest

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/indexkit/indexkit/lease"
)

// This file is the sequential specification that [History.CheckLinearizable]
// checks histories against: one item's row, with its lease, its fence and
// its open auction, as lease/memory implements it under its lock.
//
// # Time
//
// The store decides expiry, auction windows and pending-bid markers by its
// own clock at the instant an operation takes effect, which the history
// does not record. The model is therefore nondeterministic in time, and
// only there: an operation takes effect at some instant between its call
// and its return (and no earlier than the call of any operation ordered
// before it, nor than an expiry, deadline or marker end that one of them
// let pass, less the margin), the store's clock reads that instant to
// within the clock margin, and an expiry, deadline or marker that falls inside that range
// may have passed or not: the model follows both branches (porcupine's
// power-set construction). One outside it has certainly passed, or
// certainly not. Every expiry the store reports (a grant's, a renewal's, a
// row's) pins the model's to that exact value, after checking that it
// lies TTL after the operation that set it. So the model checks that a
// lease lapses neither early nor late by more than the margin, that a
// lapse is permanent until the next grant, and that windows close and
// markers expire on time.
//
// # What the history cannot see
//
// A call of unknown outcome (WithUnknownOutcome) returned nothing: its
// span runs to the end of the history, and the model follows both the
// state it leaves untouched and every state it can leave with any result
// (a grant of unknown fence and expiry, a renewal to an unknown expiry),
// as it does for a late bid below.
//
// A bid that arrives after the window closes the auction and fails with
// lease.ErrAuctionClosed without saying who won or with what fence. The
// model then knows the winner (it knows the bids) but only a lower bound
// of the fence and a range for the expiry, until a later operation (a Get,
// an owner operation) reveals them.

type linKind uint8

const (
	opGet linKind = iota
	opBid
	opEvaluate
	opRenew
	opRelease
	opUpdate
)

func (k linKind) String() string {
	return [...]string{"Get", "Bid", "Evaluate", "Renew", "Release", "Update"}[k]
}

// linInput is one operation's call, on one item. A batched renewal is split
// into one operation per item, each with the batch's call and return times
// (a relaxation: the batch is atomic on the store, the model lets each
// item's part take effect at its own instant within the call).
type linInput struct {
	kind   linKind
	item   string
	holder string      // Bid
	free   int64       // Bid
	refs   []lease.Ref // Renew (this item's refs, in batch order); Release, Update: refs[0]
	batch  int         // Renew: refs in the whole call
	mut    linMutation // Update
	call   int64       // ns on the history's clock
	ret    int64       // for an unknown outcome, the end of the history
	seen   int64       // an unknown outcome: when the client saw the error
}

type linMutation struct {
	commit    string
	ready     int8  // -1 unset, 0 false, 1 true
	size      int64 // -1 unset
	draining  bool
	ifVersion uint64
	hasIfVer  bool
}

// linOutput is what the operation returned; err is the sentinel of package
// lease the error wraps, an *unknownOutcome, or nil. The model's operations
// take a nil *linOutput for an unknown outcome: it matches every result.
type linOutput struct {
	err      error
	row      lease.Row           // Get, Update
	bid      lease.BidResult     // Bid
	eval     lease.AuctionResult // Evaluate
	renewals []lease.Renewal     // Renew, one per input ref
}

type linOffer struct {
	holder string
	free   int64
}

// linPend is a holder's pending-bid marker, expiring within [lo, hi].
type linPend struct {
	holder string
	round  uint64
	lo, hi int64
}

// linState is one item's row. Times are ns; a range [lo, hi] is exact
// (lo == hi, on the store's clock) once the store has reported it.
type linState struct {
	init bool // false: the partition's state before its first operation
	tmin int64

	owner      string
	fence      lease.Fence // exact, or a lower bound
	fenceExact bool
	expLo      int64
	expHi      int64
	expExact   bool
	draining   bool
	ready      bool

	commit   string
	version  uint64
	size     int64
	minBid   int64
	maxBids  int
	round    uint64
	unleased int

	open    bool
	dlLo    int64
	dlHi    int64
	dlExact bool
	bids    []linOffer
	pend    []linPend
}

func (s *linState) equal(o *linState) bool {
	return s.init == o.init && s.tmin == o.tmin && s.owner == o.owner && s.fence == o.fence &&
		s.fenceExact == o.fenceExact && s.expLo == o.expLo && s.expHi == o.expHi && s.expExact == o.expExact &&
		s.draining == o.draining && s.ready == o.ready && s.commit == o.commit && s.version == o.version &&
		s.size == o.size && s.minBid == o.minBid && s.maxBids == o.maxBids && s.round == o.round &&
		s.unleased == o.unleased && s.open == o.open && s.dlLo == o.dlLo && s.dlHi == o.dlHi &&
		s.dlExact == o.dlExact && slices.Equal(s.bids, o.bids) && slices.Equal(s.pend, o.pend)
}

func (s *linState) hash() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%d|%d|%d|%s|%d|%d|%d", s.owner, s.fence, s.expLo, s.version, s.round, s.commit, len(s.bids), len(s.pend), s.dlLo)
	return h.Sum64()
}

func (s *linState) String() string {
	if !s.init {
		return "(initial)"
	}
	var b strings.Builder
	fence := fmt.Sprint(s.fence)
	if !s.fenceExact {
		fence = "≥" + fence
	}
	if s.owner != "" {
		st := "leased"
		if s.draining {
			st = "draining"
		}
		fmt.Fprintf(&b, "%s by %s fence %s exp %s", st, s.owner, fence, span(s.expLo, s.expHi, s.expExact))
	} else {
		fmt.Fprintf(&b, "idle fence %s", fence)
	}
	fmt.Fprintf(&b, " v%d commit %q ready %v minbid %d round %d unleased %d", s.version, s.commit, s.ready, s.minBid, s.round, s.unleased)
	if s.open {
		fmt.Fprintf(&b, " auction until %s bids %v", span(s.dlLo, s.dlHi, s.dlExact), s.bids)
	}
	if len(s.pend) > 0 {
		fmt.Fprintf(&b, " pending %v", s.pend)
	}
	return b.String()
}

func span(lo, hi int64, exact bool) string {
	ms := func(ns int64) string { return fmt.Sprintf("%.3fms", float64(ns%1e9)/1e6) } // within the second
	if exact {
		return ms(lo)
	}
	return "[" + ms(lo) + "," + ms(hi) + "]"
}

// linModel is the specification, with the settings of the recorded store.
type linModel struct {
	ttl, window, grace int64        // ns
	margin             int64        // clock margin, ns
	cfg                lease.Config // the store's settings (threshold, minimum-bid factor)
	initial            map[string]linState
	// noExpiry: the store's leased rows carry no Expiry
	// (lease.RowExpiryReporter).
	noExpiry bool
}

// possible reports whether, at in's instant, the instant [lo, hi] may not
// have come yet (before) and whether it may have (after).
func (m *linModel) possible(lo, hi int64, in *linInput, tmin int64) (before, after bool) {
	from := max(in.call, tmin)
	return from-m.margin < hi, in.ret+m.margin >= lo
}

// passed returns s at an instant when the store's clock has reached lo
// (an expiry, a deadline or a marker's end that the model follows as
// passed): the operation takes effect no earlier than lo less the clock
// margin, and neither does any operation ordered after it. Without it, a
// call whose span is long (an unknown outcome's runs to the end of the
// history) could let an expiry pass for the operations after it, however
// early they returned.
func (m *linModel) passed(s linState, lo int64) linState {
	s.tmin = max(s.tmin, lo-m.margin)
	return s
}

// is reports whether the operation returned err (nil: success); an
// unknown outcome (o nil) matches every result.
func (o *linOutput) is(err error) bool { return o == nil || o.err == err }

// within reports whether a time x reported by the store agrees with the
// range [lo, hi].
func (m *linModel) within(x, lo, hi int64, exact bool) bool {
	if exact {
		return x == lo
	}
	return x >= lo-m.margin && x <= hi+m.margin
}

func (m *linModel) threshold(s *linState) int {
	return m.cfg.Threshold(s.maxBids, 0)
}

// step returns every state the item can be in after in returned out, from
// s; none if the store could not have answered so.
func (m *linModel) step(s0 linState, in *linInput, out *linOutput) []linState {
	if !s0.init {
		s0 = m.initial[in.item]
	}
	var next []linState
	if isUnknown(out.err) {
		// The call took no effect (or only after everything the history
		// saw), or it took effect with any of its results, at an instant
		// from its call on: the operations below take out == nil as a
		// result that matches every one.
		next = append(next, s0)
		if in.kind == opGet {
			return next
		}
		out = nil
	}
	for _, s := range m.lapse(s0, in) {
		switch in.kind {
		case opGet:
			if out.err == nil {
				if t, ok := m.matchRow(s, &out.row); ok {
					next = append(next, t)
				}
			}
		case opBid:
			next = append(next, m.bid(s, in, out)...)
		case opEvaluate:
			next = append(next, m.evaluate(s, in, out)...)
		case opRenew:
			next = append(next, m.renew(s, in, out)...)
		case opRelease:
			for _, c := range m.check(s, in.refs[0]) {
				if !out.is(c.err) {
					continue
				}
				t := c.s
				if c.err == nil {
					t.owner, t.draining, t.ready = "", false, false
					t.expLo, t.expHi, t.expExact = 0, 0, false
				}
				next = append(next, t)
			}
		case opUpdate:
			next = append(next, m.update(s, in, out)...)
		}
	}
	return next
}

// lapse applies the expiry of the lease, if it may have come. It is the
// first thing every step does, so it also refuses an operation that
// cannot come here: one that returned before the earliest instant the
// operations ordered before it leave (s.tmin).
func (m *linModel) lapse(s linState, in *linInput) []linState {
	s.tmin = max(s.tmin, in.call)
	if s.tmin > in.ret {
		return nil
	}
	if s.owner == "" {
		return []linState{s}
	}
	before, after := m.possible(s.expLo, s.expHi, in, s.tmin)
	var out []linState
	if before {
		out = append(out, s)
	}
	if after {
		s = m.passed(s, s.expLo)
		s.owner, s.draining, s.ready = "", false, false
		s.expLo, s.expHi, s.expExact = 0, 0, false
		out = append(out, s)
	}
	return out
}

// matchRow checks a row the store returned against s and returns s with
// the fence, expiry and deadline the row reveals.
func (m *linModel) matchRow(s linState, r *lease.Row) (linState, bool) {
	state := lease.Idle
	if s.owner != "" {
		state = lease.Leased
		if s.draining {
			state = lease.Draining
		}
	}
	bids := 0
	if s.open {
		bids = len(s.bids)
	}
	if r.Owner != s.owner || r.State != state || r.Version != s.version || r.Commit != s.commit ||
		r.Ready != s.ready || r.Size != s.size || r.MinBid != s.minBid || r.MaxBids != s.maxBids ||
		r.Round != s.round || r.Unleased != s.unleased || r.Bids != bids {
		return s, false
	}
	if !m.revealFence(&s, r.Fence) {
		return s, false
	}
	switch {
	case s.owner == "" || m.noExpiry:
		if !r.Expiry.IsZero() {
			return s, false
		}
	default:
		x := r.Expiry.UnixNano()
		if !m.within(x, s.expLo, s.expHi, s.expExact) {
			return s, false
		}
		s.expLo, s.expHi, s.expExact = x, x, true
	}
	if !s.open {
		return s, r.AuctionDeadline.IsZero()
	}
	return s, m.revealDeadline(&s, r.AuctionDeadline.UnixNano())
}

func (m *linModel) revealFence(s *linState, f lease.Fence) bool {
	if s.fenceExact {
		return f == s.fence
	}
	if f < s.fence {
		return false
	}
	s.fence, s.fenceExact = f, true
	return true
}

func (m *linModel) revealDeadline(s *linState, x int64) bool {
	if !m.within(x, s.dlLo, s.dlHi, s.dlExact) {
		return false
	}
	s.dlLo, s.dlHi, s.dlExact = x, x, true
	return true
}

type checked struct {
	err error
	s   linState
}

// check is the owner check of ref: every (error, state) it may give.
func (m *linModel) check(s linState, ref lease.Ref) []checked {
	held := func(s linState) error {
		if ref.Fence > s.fence || s.owner == "" || s.owner != ref.Holder {
			return lease.ErrNotHeld
		}
		return nil
	}
	if ref.Fence < s.fence {
		return []checked{{lease.ErrStaleFence, s}}
	}
	if s.fenceExact {
		return []checked{{held(s), s}}
	}
	// The fence is unknown, at least s.fence: it is greater than ref's,
	// equal to it, or (if there is room) smaller.
	out := make([]checked, 0, 3)
	g := s
	g.fence = ref.Fence + 1
	out = append(out, checked{lease.ErrStaleFence, g})
	e := s
	e.fence, e.fenceExact = ref.Fence, true
	out = append(out, checked{held(e), e})
	if ref.Fence > s.fence {
		out = append(out, checked{lease.ErrNotHeld, s})
	}
	return out
}
