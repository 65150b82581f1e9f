package leasetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/indexkit/indexkit/lease"
)

// ErrNotLinearizable is wrapped by [History.CheckLinearizable] when no
// order of the history's operations satisfies the sequential model.
var ErrNotLinearizable = errors.New("leasetest: history not linearizable")

// ErrCheckTimeout is wrapped by [History.CheckLinearizable] when porcupine
// could not decide within the check timeout: the history proves nothing.
var ErrCheckTimeout = errors.New("leasetest: linearizability check timed out")

// ErrFenceViolation is wrapped by each violation [History.CheckFences]
// reports.
var ErrFenceViolation = errors.New("leasetest: fence violation")

// LinearOption configures [RunLinearizable] and [RecordHistory]; an
// invalid value (a non-positive unit or timeout, a negative margin) fails
// the test. Counts below 1 are raised to 1.
type LinearOption func(*linearConfig) error

type linearConfig struct {
	rounds  int
	clients int
	ops     int
	unit    time.Duration
	margin  time.Duration
	timeout time.Duration
	latency time.Duration
	overlap float64
	unknown func(error) bool
}

func defaultLinear() linearConfig {
	return linearConfig{
		rounds:  4,
		clients: 8,
		ops:     150,
		unit:    5 * time.Millisecond,
		margin:  5 * time.Millisecond,
		timeout: time.Minute,
		latency: -1, // a quarter of the unit
		overlap: 0.3,
	}
}

// linearOptions applies opts to the defaults; an invalid one fails t.
func linearOptions(t *testing.T, opts []LinearOption) linearConfig {
	t.Helper()
	cfg := defaultLinear()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.latency < 0 {
		cfg.latency = cfg.unit / 4
	}
	return cfg
}

// WithRounds sets how many histories [RunLinearizable] records and checks,
// each on a fresh store with its own seed (default 4).
func WithRounds(n int) LinearOption {
	return func(c *linearConfig) error { c.rounds = max(1, n); return nil }
}

// WithClients sets how many concurrent clients (nodes) a history has
// (default 8).
func WithClients(n int) LinearOption {
	return func(c *linearConfig) error { c.clients = max(1, n); return nil }
}

// WithOpsPerClient sets how many store calls each client makes in a
// history (default 150).
func WithOpsPerClient(n int) LinearOption {
	return func(c *linearConfig) error { c.ops = max(1, n); return nil }
}

// WithUnit sets the time unit of a history (default 5ms): the store's TTL is
// 8 units, its auction window 4, its pending grace 1, and clients pause up
// to a unit between calls.
func WithUnit(d time.Duration) LinearOption {
	return func(c *linearConfig) error {
		if d <= 0 {
			return fmt.Errorf("leasetest: unit %v: %w", d, lease.ErrInvalid)
		}
		c.unit = d
		return nil
	}
}

// WithClockMargin sets how far the store's clock may be from the test's
// (default 5ms). The model treats an expiry, deadline or marker within the
// margin of an operation as possibly passed or not; a backend whose time
// has coarser steps (Redis's key expiry is in milliseconds) needs a margin
// above them.
func WithClockMargin(d time.Duration) LinearOption {
	return func(c *linearConfig) error {
		if d < 0 {
			return fmt.Errorf("leasetest: clock margin %v: %w", d, lease.ErrInvalid)
		}
		c.margin = d
		return nil
	}
}

// WithLatency sets the most a client's call waits on its way to the store
// and again on its way back, a random time below d each way, as a network
// would add (default: a quarter of the unit; 0 turns it off). It makes
// the calls of different clients overlap however fast the store answers,
// so that porcupine has orders to choose between: without it, the calls
// to an in-process store last microseconds between pauses of
// milliseconds, and almost none overlap.
func WithLatency(d time.Duration) LinearOption {
	return func(c *linearConfig) error {
		if d < 0 {
			return fmt.Errorf("leasetest: latency %v: %w", d, lease.ErrInvalid)
		}
		c.latency = d
		return nil
	}
}

// WithMinOverlap sets the fraction of operations that must overlap
// another operation on the same item across the histories of
// [RunLinearizable] (default 0.3, see [HistoryStats.OverlapFraction]);
// below it the test fails, since a history without concurrency checks
// little but the model. 0 turns the check off.
func WithMinOverlap(f float64) LinearOption {
	return func(c *linearConfig) error {
		if f < 0 || f > 1 {
			return fmt.Errorf("leasetest: overlap fraction %v: %w", f, lease.ErrInvalid)
		}
		c.overlap = f
		return nil
	}
}

// WithUnknownOutcome makes the history record a call that fails with an
// error for which indeterminate returns true (a connection lost, a server
// restarting) as a call of unknown outcome, instead of failing the test:
// the store may or may not have carried it out, at any instant from its
// call on, even after the client saw the error (a request still in the
// server's socket when the client gave up). The model lets such a call
// take effect with any of its possible results at any instant from its call
// to the end of the history, or not at all; the fence check leaves it out,
// since it observed nothing. indeterminate is called only for errors that
// wrap none of the sentinels of package lease; every other error still
// fails the test. Without this option every such error does.
func WithUnknownOutcome(indeterminate func(error) bool) LinearOption {
	return func(c *linearConfig) error { c.unknown = indeterminate; return nil }
}

// WithCheckTimeout bounds porcupine's search per history (default 1m).
func WithCheckTimeout(d time.Duration) LinearOption {
	return func(c *linearConfig) error {
		if d <= 0 {
			return fmt.Errorf("leasetest: check timeout %v: %w", d, lease.ErrInvalid)
		}
		c.timeout = d
		return nil
	}
}

// RunLinearizable records concurrent histories against fresh stores from
// newStore, on real time, and checks each: that it is linearizable with
// respect to the sequential model of one item's row (grants through auction
// close, renewals single and batched, releases, owner updates, reads), with
// porcupine; and that the store acted as a fence-aware resource expects
// (see [History.CheckFences]). A history that is not linearizable fails the
// test with porcupine's visualization written to a file whose path is
// logged. Finally it checks that the histories, together, exercised what
// they claim to: grants, accepted renewals and updates, holders that lost
// their leases, owner operations refused both as stale and as not held,
// writes to the register, and real concurrency: at least 30% of the
// operations overlapping another on the same item ([WithMinOverlap]),
// with each call delayed on its way to the store and back
// ([WithLatency]); when the histories asked for fall short of those bars
// (a loaded machine slows clients), up to three more are recorded and
// checked first. It logs the overlap of each history and of all.
//
// The factory gets a real clock ([RealClock]) and the history's options
// (TTL, window, grace, minimum-bid factor); a backend with an in-process
// clock passes the clock on, a backend with a server clock ignores it. The
// store's clock must agree with the test machine's within the clock margin
// ([WithClockMargin]): run it on the same host.
func RunLinearizable(t *testing.T, newStore Factory, opts ...LinearOption) {
	cfg := linearOptions(t, opts)
	var total HistoryStats
	// short lists what the histories so far did too little of.
	short := func() []string {
		var out []string
		for _, c := range []struct {
			what     string
			got, min int
		}{
			{"grants", total.Grants, len(linItems) * cfg.rounds},
			{"owner updates accepted", total.Updates, cfg.rounds},
			{"renewals accepted", total.Renewals, cfg.rounds},
			{"leases lost by their holders", total.Lapsed, 1},
			{"owner operations refused with a stale fence", total.Stale, 1},
			{"owner operations refused as not held", total.NotHeld, 1},
			{"register writes accepted", total.RegisterAccepted, cfg.rounds},
		} {
			if c.got < c.min {
				out = append(out, fmt.Sprintf("the histories had %d %s, want at least %d: the check exercised too little", c.got, c.what, c.min))
			}
		}
		return out
	}
	// The histories must have exercised what they check. The bars are low,
	// but a loaded machine slows clients (a holder's every renewal may come
	// after its lease lapsed): up to extraRounds more histories are
	// recorded, each checked like the others, before the bars fail.
	const extraRounds = 3
	for r := 0; r < cfg.rounds || (r < cfg.rounds+extraRounds && !t.Failed() && len(short()) > 0); r++ {
		if r >= cfg.rounds {
			t.Logf("after %d histories: %v; recording another", r, short())
		}
		t.Run(fmt.Sprintf("history=%d", r), func(t *testing.T) {
			h := RecordHistory(t, newStore, uint64(r), opts...)
			if t.Failed() {
				return // a store call failed outright; the history is incomplete
			}
			st := h.Stats()
			t.Logf("%d ops, %.0f%% overlapping: %+v", len(h.ops), 100*st.OverlapFraction(), st)
			start := time.Now()
			if err := h.CheckLinearizable(""); err != nil {
				t.Fatal(err)
			}
			t.Logf("linearizable (checked in %v)", time.Since(start).Round(time.Millisecond))
			if err := h.CheckFences(); err != nil {
				t.Fatal(err)
			}
			total.add(st)
		})
	}
	if t.Failed() {
		return
	}
	t.Logf("all histories: %.1f%% of %d operations overlapping: %+v", 100*total.OverlapFraction(), total.Ops, total)
	for _, msg := range short() {
		t.Error(msg)
	}
	if f := total.OverlapFraction(); f < cfg.overlap {
		t.Errorf("%.1f%% of the histories' %d operations overlapped another on the same item, want at least %.0f%%: porcupine had little order to find",
			100*f, total.Ops, 100*cfg.overlap)
	}
}

// HistoryStats counts what a history did.
type HistoryStats struct {
	Ops      int // operations on the store (a batched renewal counts once per item)
	Grants   int // auctions won, as seen in bid and evaluate results
	Renewals int // renewals accepted
	Releases int // releases accepted
	Updates  int // owner updates accepted
	Stale    int // owner operations refused with lease.ErrStaleFence
	NotHeld  int // owner operations refused with lease.ErrNotHeld
	Lapsed   int // clients that found a lease they held refused (lapsed or taken over)
	LateBids int // bids refused with lease.ErrAuctionClosed, which closed the auction unseen
	// Unknown counts the operations whose outcome the client never learnt
	// (see [WithUnknownOutcome]); a batched renewal counts once per item.
	Unknown int
	// RegisterAccepted and RegisterRejected count the writes of lease
	// holders to the fenced register outside the store.
	RegisterAccepted, RegisterRejected int
	// Overlapping counts the operations that ran at the same time as
	// another operation on the same item (their call-to-return spans
	// intersect): the ones whose order porcupine has to find.
	Overlapping int
}

// OverlapFraction is the fraction of the operations that overlapped
// another on the same item, 0 for no operations.
func (s HistoryStats) OverlapFraction() float64 {
	if s.Ops == 0 {
		return 0
	}
	return float64(s.Overlapping) / float64(s.Ops)
}

func (s *HistoryStats) add(o HistoryStats) {
	s.Ops += o.Ops
	s.Grants += o.Grants
	s.Renewals += o.Renewals
	s.Releases += o.Releases
	s.Updates += o.Updates
	s.Stale += o.Stale
	s.NotHeld += o.NotHeld
	s.Lapsed += o.Lapsed
	s.LateBids += o.LateBids
	s.Unknown += o.Unknown
	s.RegisterAccepted += o.RegisterAccepted
	s.RegisterRejected += o.RegisterRejected
	s.Overlapping += o.Overlapping
}

// overlapping counts the operations of ops whose call-to-return span
// intersects that of another operation on the same item.
func overlapping(ops []porcupine.Operation) int {
	byItem := map[string][]porcupine.Operation{}
	for _, op := range ops {
		id := op.Input.(*linInput).item
		byItem[id] = append(byItem[id], op)
	}
	n := 0
	for _, ops := range byItem {
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		var lastRet int64 // the latest return of the operations called before ops[i]
		for i, op := range ops {
			// Sorted by call, the next operation is the first to start
			// after op: if it starts after op returned, none does earlier.
			if (i > 0 && op.Call < lastRet) || (i+1 < len(ops) && ops[i+1].Call < op.Return) {
				n++
			}
			lastRet = max(lastRet, op.Return)
		}
	}
	return n
}

// History is one recorded concurrent history of a store: every call with
// its invocation and return times (on the test's monotonic clock) and its
// results, plus the log of a fenced register that the clients wrote to.
type History struct {
	cfg   linearConfig
	model *linModel
	ops   []porcupine.Operation
	reg   map[string]*register
	stats HistoryStats
}

// Stats returns what the history did.
func (h *History) Stats() HistoryStats { return h.stats }

// The items of a history, with their MaxBids overrides: a short circuit at
// two and at three bids, and one closed by its window only.
var linItems = []lease.Item{
	{ID: "a", Commit: "c0", MaxBids: 2},
	{ID: "b", Commit: "c0", MaxBids: 3},
	{ID: "c", Commit: "c0"},
}

// RecordHistory records one history against a fresh store from newStore,
// seeded by seed. Clients (nodes) bid on the items and evaluate their
// auctions, which is the only way to a grant; holders renew (one lease or
// all of theirs in one batched call), update their rows, release, and
// sometimes pause for longer than the TTL so that their leases lapse and
// are granted again; everyone reads rows; clients also use old refs on
// purpose. After every accepted update the holder writes its fence to a
// fenced register outside the store, sometimes after such a pause. Each
// call waits a random time on its way to the store and back
// ([WithLatency]); its recorded span runs from before the first wait to
// after the second, as a client across a network sees it.
//
// Each client bids under its own holder name per item ("n3-a"), so that
// the store's rule of one pending bid per node, which spans items, stays
// within one item's partition of the model; the conformance suite checks
// that rule.
//
// A store error that is not a sentinel of package lease fails t, unless
// [WithUnknownOutcome] classes it as indeterminate: then the call is
// recorded with an unknown outcome, and its recorded span runs to the end
// of the history, since it may have taken effect at any time after its
// call. The overlap of the history ([HistoryStats.Overlapping]) counts
// such a call over the span its client saw, from call to error.
func RecordHistory(t *testing.T, newStore Factory, seed uint64, opts ...LinearOption) *History {
	t.Helper()
	cfg := linearOptions(t, opts)
	u := cfg.unit
	ttl, window, grace := 8*u, 4*u, u
	storeOpts := []lease.Option{
		lease.WithTTL(ttl), lease.WithAuctionWindow(window), lease.WithPendingGrace(grace),
		lease.WithMinBidFactor(1),
	}
	lcfg, err := lease.NewConfig(storeOpts...)
	if err != nil {
		t.Fatalf("linearizability options: %v", err)
	}
	st := newStore(t, RealClock(), storeOpts...)
	defer st.Close()
	s := withLatency(st, cfg.latency)
	ctx := context.Background()

	m := &linModel{
		ttl: int64(ttl), window: int64(window), grace: int64(grace), margin: int64(cfg.margin),
		cfg: lcfg, initial: map[string]linState{}, noExpiry: !rowsCarryExpiry(st),
	}
	h := &History{cfg: cfg, model: m, reg: map[string]*register{}}
	for _, it := range linItems {
		if err := s.Put(ctx, it); err != nil {
			t.Fatalf("Put(%q): %v", it.ID, err)
		}
		r, err := s.Get(ctx, it.ID)
		if err != nil {
			t.Fatalf("Get(%q): %v", it.ID, err)
		}
		m.initial[it.ID] = linState{
			init: true, fence: r.Fence, fenceExact: true, commit: r.Commit, version: r.Version,
			size: r.Size, minBid: r.MinBid, maxBids: r.MaxBids, round: r.Round, unleased: r.Unleased,
		}
		h.reg[it.ID] = &register{}
	}

	start := time.Now()
	base := start.UnixNano()
	now := func() int64 { return base + int64(time.Since(start)) }
	workers := make([]*linWorker, cfg.clients)
	var wg sync.WaitGroup
	for i := range workers {
		w := &linWorker{
			t: t, s: s, ctx: ctx, id: i, now: now, reg: h.reg, unit: u, ttl: ttl, unknown: cfg.unknown,
			rng:  rand.New(rand.NewPCG(seed, uint64(i)+1)),
			held: map[string]lease.Ref{}, old: map[string][]lease.Ref{}, version: map[string]uint64{},
		}
		workers[i] = w
		wg.Go(func() { w.run(cfg.ops) })
	}
	wg.Wait()
	for _, w := range workers {
		h.ops = append(h.ops, w.ops...)
		h.stats.add(w.stats)
	}
	sort.SliceStable(h.ops, func(i, j int) bool { return h.ops[i].Call < h.ops[j].Call })
	h.stats.Ops = len(h.ops)
	h.stats.Overlapping = overlapping(h.ops)
	// A call of unknown outcome may take effect at any time after its
	// call: after the last return of the history is the same as never.
	var end int64
	for _, op := range h.ops {
		end = max(end, op.Return)
	}
	for i := range h.ops {
		if in, out := h.ops[i].Input.(*linInput), h.ops[i].Output.(*linOutput); isUnknown(out.err) {
			in.seen, in.ret = in.ret, end
			h.ops[i].Return = end
			h.stats.Unknown++
		}
	}
	for _, r := range h.reg {
		for _, w := range r.log {
			if w.accepted {
				h.stats.RegisterAccepted++
			} else {
				h.stats.RegisterRejected++
			}
		}
	}
	return h
}

// CheckLinearizable checks the history with porcupine against the model.
// It returns nil if the history is linearizable. Otherwise it writes
// porcupine's visualization (an HTML page showing the longest partial
// linearizations and where they got stuck) to a new file in dir (the
// system's temporary directory if dir is empty) and returns an error
// wrapping [ErrNotLinearizable] that names the file, or [ErrCheckTimeout].
func (h *History) CheckLinearizable(dir string) error {
	model := h.model.porcupine()
	timeout := h.cfg.timeout
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, timeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("%w after %v (%d operations)", ErrCheckTimeout, timeout, len(h.ops))
	}
	f, err := os.CreateTemp(dir, "leasetest-linear-*.html")
	if err != nil {
		return fmt.Errorf("%w (%d operations); writing the visualization: %v", ErrNotLinearizable, len(h.ops), err)
	}
	name := f.Name()
	err = porcupine.Visualize(model, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w (%d operations); writing the visualization to %s: %v", ErrNotLinearizable, len(h.ops), name, err)
	}
	return fmt.Errorf("%w (%d operations): visualization in %s", ErrNotLinearizable, len(h.ops), name)
}
