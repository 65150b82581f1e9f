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

// LinearOption configures [RunLinearizable] and [RecordHistory].
type LinearOption func(*linearConfig)

type linearConfig struct {
	rounds  int
	clients int
	ops     int
	unit    time.Duration
	margin  time.Duration
	timeout time.Duration
}

func defaultLinear() linearConfig {
	return linearConfig{
		rounds:  4,
		clients: 8,
		ops:     150,
		unit:    5 * time.Millisecond,
		margin:  5 * time.Millisecond,
		timeout: time.Minute,
	}
}

// WithRounds sets how many histories [RunLinearizable] records and checks,
// each on a fresh store with its own seed (default 4).
func WithRounds(n int) LinearOption { return func(c *linearConfig) { c.rounds = max(1, n) } }

// WithClients sets how many concurrent clients (nodes) a history has
// (default 8).
func WithClients(n int) LinearOption { return func(c *linearConfig) { c.clients = max(1, n) } }

// WithOpsPerClient sets how many store calls each client makes in a
// history (default 150).
func WithOpsPerClient(n int) LinearOption { return func(c *linearConfig) { c.ops = max(1, n) } }

// WithUnit sets the time unit of a history (default 5ms): the store's TTL is
// 8 units, its auction window 4, its pending grace 1, and clients pause up
// to a unit between calls.
func WithUnit(d time.Duration) LinearOption { return func(c *linearConfig) { c.unit = d } }

// WithClockMargin sets how far the store's clock may be from the test's
// (default 5ms). The model treats an expiry, deadline or marker within the
// margin of an operation as possibly passed or not; a backend whose time
// has coarser steps (Redis's key expiry is in milliseconds) needs a margin
// above them.
func WithClockMargin(d time.Duration) LinearOption { return func(c *linearConfig) { c.margin = d } }

// WithCheckTimeout bounds porcupine's search per history (default 1m).
func WithCheckTimeout(d time.Duration) LinearOption { return func(c *linearConfig) { c.timeout = d } }

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
// and writes to the register.
//
// The factory gets a real clock ([RealClock]) and the history's options
// (TTL, window, grace, minimum-bid factor); a backend with an in-process
// clock passes the clock on, a backend with a server clock ignores it. The
// store's clock must agree with the test machine's within the clock margin
// ([WithClockMargin]): run it on the same host.
func RunLinearizable(t *testing.T, newStore Factory, opts ...LinearOption) {
	cfg := defaultLinear()
	for _, o := range opts {
		o(&cfg)
	}
	var total HistoryStats
	for r := range cfg.rounds {
		t.Run(fmt.Sprintf("history=%d", r), func(t *testing.T) {
			h := RecordHistory(t, newStore, uint64(r), opts...)
			if t.Failed() {
				return // a store call failed outright; the history is incomplete
			}
			st := h.Stats()
			t.Logf("%d ops: %+v", len(h.ops), st)
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
	// The histories must have exercised what they check. The bars are low:
	// a loaded machine slows clients, not the checks.
	t.Logf("all histories: %+v", total)
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
			t.Errorf("the histories had %d %s, want at least %d: the check exercised too little", c.got, c.what, c.min)
		}
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
	// RegisterAccepted and RegisterRejected count the writes of lease
	// holders to the fenced register outside the store.
	RegisterAccepted, RegisterRejected int
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
	s.RegisterAccepted += o.RegisterAccepted
	s.RegisterRejected += o.RegisterRejected
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
// fenced register outside the store, sometimes after such a pause.
//
// Each client bids under its own holder name per item ("n3-a"), so that
// the store's rule of one pending bid per node, which spans items, stays
// within one item's partition of the model; the conformance suite checks
// that rule.
//
// A store error that is not a sentinel of package lease fails t.
func RecordHistory(t *testing.T, newStore Factory, seed uint64, opts ...LinearOption) *History {
	t.Helper()
	cfg := defaultLinear()
	for _, o := range opts {
		o(&cfg)
	}
	u := cfg.unit
	ttl, window, grace := 8*u, 4*u, u
	storeOpts := []lease.Option{
		lease.WithTTL(ttl), lease.WithAuctionWindow(window), lease.WithPendingGrace(grace),
		lease.WithMinBidFactor(1), lease.WithSafetyMargin(u),
	}
	lcfg, err := lease.NewConfig(storeOpts...)
	if err != nil {
		t.Fatalf("linearizability options: %v", err)
	}
	s := newStore(t, RealClock(), storeOpts...)
	defer s.Close()
	ctx := context.Background()

	m := &linModel{
		ttl: int64(ttl), window: int64(window), grace: int64(grace), margin: int64(cfg.margin),
		cfg: lcfg, initial: map[string]linState{},
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
			t: t, s: s, ctx: ctx, id: i, now: now, reg: h.reg, unit: u, ttl: ttl,
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

// register is a fence-aware resource outside the store: it accepts a write
// only if lease.CheckFence accepts its fence against the highest it has
// accepted, and logs every write in the order it decided them.
type register struct {
	mu   sync.Mutex
	last lease.Fence
	log  []regWrite
}

type regWrite struct {
	holder   string
	fence    lease.Fence
	accepted bool
}

func (r *register) write(holder string, f lease.Fence) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := lease.CheckFence(r.last, f) == nil
	if ok {
		r.last = f
	}
	r.log = append(r.log, regWrite{holder, f, ok})
	return ok
}

// linWorker is one client of a history.
type linWorker struct {
	t    *testing.T
	s    lease.Store
	ctx  context.Context
	id   int
	now  func() int64
	reg  map[string]*register
	unit time.Duration
	ttl  time.Duration
	rng  *rand.Rand

	held    map[string]lease.Ref   // the grant the client believes current, per item
	old     map[string][]lease.Ref // its earlier grants, per item
	version map[string]uint64      // the last version it saw, per item
	seq     int

	ops   []porcupine.Operation
	stats HistoryStats
}

func (w *linWorker) holder(item string) string { return fmt.Sprintf("n%d-%s", w.id, item) }

func (w *linWorker) record(in *linInput, out *linOutput) {
	w.ops = append(w.ops, porcupine.Operation{ClientId: w.id, Input: in, Call: in.call, Output: out, Return: in.ret})
}

// errOf classifies err: nil, or the sentinel of package lease it wraps.
// Any other error fails the test.
func (w *linWorker) errOf(what string, err error) error {
	if err == nil {
		return nil
	}
	c := class(err)
	if isSentinel(c) {
		return c
	}
	w.t.Errorf("%s: %v", what, err)
	return errUnexpected
}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if err == s {
			return true
		}
	}
	return false
}

func (w *linWorker) run(n int) {
	for range n {
		if w.t.Failed() {
			return
		}
		time.Sleep(time.Duration(w.rng.Int64N(int64(w.unit))))
		item := linItems[w.rng.IntN(len(linItems))].ID
		if len(w.held) > 0 && w.rng.IntN(3) > 0 {
			// Holders mostly tend to what they hold.
			var held []string
			for _, it := range linItems {
				if _, ok := w.held[it.ID]; ok {
					held = append(held, it.ID)
				}
			}
			item = held[w.rng.IntN(len(held))]
		}
		_, held := w.held[item]
		p := w.rng.IntN(100)
		switch {
		case held && p < 30:
			w.update(item)
		case held && p < 50:
			w.renew(item)
		case held && p < 56:
			w.release(item)
		case held && p < 64:
			w.stale(item)
		case held && p < 80:
			w.get(item)
		case held && p < 84:
			w.pause()
		case held:
			w.evaluate(item)
		case p < 40:
			w.bid(item)
		case p < 65:
			w.evaluate(item)
		case p < 88:
			w.get(item)
		default:
			w.stale(item)
		}
	}
}

// pause stops the client for longer than the TTL, as a GC pause or a
// stopped process would: its leases lapse unless it is lucky.
func (w *linWorker) pause() {
	time.Sleep(w.ttl + w.ttl/2 + time.Duration(w.rng.Int64N(int64(w.unit))))
}

// lost moves the client's current grant of item to its old ones.
func (w *linWorker) lost(item string) {
	if ref, ok := w.held[item]; ok {
		delete(w.held, item)
		w.old[item] = append(w.old[item], ref)
		if len(w.old[item]) > 4 {
			w.old[item] = w.old[item][1:]
		}
		w.stats.Lapsed++
	}
}

// won records a grant the client saw, and whether it is the client's.
func (w *linWorker) won(item string, g *lease.Grant) {
	if g == nil {
		return
	}
	w.stats.Grants++
	if g.Holder == w.holder(item) {
		w.held[item] = g.Ref
	}
}

// saw learns from a row the store returned.
func (w *linWorker) saw(item string, r *lease.Row) {
	w.version[item] = r.Version
	me := w.holder(item)
	ref, held := w.held[item]
	switch {
	case r.Owner == me && (!held || ref.Fence != r.Fence):
		if held {
			w.lost(item)
		}
		w.held[item] = lease.Ref{Item: item, Holder: me, Fence: r.Fence}
	case r.Owner != me && held:
		w.lost(item)
	}
}

func (w *linWorker) refused(item string, ref lease.Ref, err error) {
	switch err {
	case lease.ErrStaleFence:
		w.stats.Stale++
	case lease.ErrNotHeld:
		w.stats.NotHeld++
	default:
		return
	}
	if cur, ok := w.held[item]; ok && cur == ref {
		w.lost(item)
	}
}

func (w *linWorker) get(item string) {
	in := &linInput{kind: opGet, item: item, call: w.now()}
	r, err := w.s.Get(w.ctx, item)
	in.ret = w.now()
	out := &linOutput{err: w.errOf("Get", err), row: r}
	w.record(in, out)
	if err == nil {
		w.saw(item, &r)
	}
}

func (w *linWorker) bid(item string) {
	free := int64(10 * (1 + w.rng.IntN(3)))
	in := &linInput{kind: opBid, item: item, holder: w.holder(item), free: free, call: w.now()}
	res, err := w.s.Bid(w.ctx, item, in.holder, free)
	in.ret = w.now()
	out := &linOutput{err: w.errOf("Bid", err), bid: res}
	w.record(in, out)
	if err == nil && res.Result != nil {
		w.won(item, res.Result.Grant)
	}
	if out.err == lease.ErrAuctionClosed {
		w.stats.LateBids++
	}
}

func (w *linWorker) evaluate(item string) {
	in := &linInput{kind: opEvaluate, item: item, call: w.now()}
	res, err := w.s.Evaluate(w.ctx, item)
	in.ret = w.now()
	out := &linOutput{err: w.errOf("Evaluate", err), eval: res}
	w.record(in, out)
	if err == nil {
		w.won(item, res.Grant)
	}
}

// renew renews every lease the client holds in one batched call, with one
// of its old refs of item now and then; the batch is recorded as one
// operation per item.
func (w *linWorker) renew(item string) {
	var refs []lease.Ref
	for _, it := range linItems {
		if ref, ok := w.held[it.ID]; ok {
			refs = append(refs, ref)
		}
	}
	if old := w.old[item]; len(old) > 0 && w.rng.IntN(3) == 0 {
		refs = append(refs, old[w.rng.IntN(len(old))])
	}
	if w.rng.IntN(3) == 0 {
		refs = []lease.Ref{w.held[item]} // a single renewal
	}
	call := w.now()
	rs, err := w.s.Renew(w.ctx, refs...)
	ret := w.now()
	e := w.errOf("Renew", err)
	if e == nil && len(rs) != len(refs) {
		w.t.Errorf("Renew of %d refs returned %d renewals", len(refs), len(rs))
		return
	}
	for _, it := range linItems {
		in := &linInput{kind: opRenew, item: it.ID, batch: len(refs), call: call, ret: ret}
		out := &linOutput{err: e}
		for i, ref := range refs {
			if ref.Item == it.ID {
				in.refs = append(in.refs, ref)
				if e == nil {
					rn := rs[i]
					rn.Err = w.errOf("Renew", rn.Err)
					out.renewals = append(out.renewals, rn)
				}
			}
		}
		if len(in.refs) > 0 {
			w.record(in, out)
		}
	}
	if e != nil {
		return
	}
	for i, ref := range refs {
		if rs[i].Err == nil {
			w.stats.Renewals++
		} else {
			w.refused(ref.Item, ref, class(rs[i].Err))
		}
	}
}

func (w *linWorker) release(item string) {
	ref := w.held[item]
	w.releaseRef(item, ref)
}

func (w *linWorker) releaseRef(item string, ref lease.Ref) {
	in := &linInput{kind: opRelease, item: item, refs: []lease.Ref{ref}, call: w.now()}
	err := w.s.Release(w.ctx, ref)
	in.ret = w.now()
	e := w.errOf("Release", err)
	w.record(in, &linOutput{err: e})
	if e == nil {
		w.stats.Releases++
		if cur, ok := w.held[item]; ok && cur == ref {
			delete(w.held, item)
			w.old[item] = append(w.old[item], ref)
		}
		return
	}
	w.refused(item, ref, e)
}

// update applies a random owner mutation with the client's current ref
// and, if the store accepts it, writes the fence to the register,
// sometimes after a pause longer than the TTL.
func (w *linWorker) update(item string) {
	ref := w.held[item]
	if w.updateRef(item, ref) {
		if w.rng.IntN(8) == 0 {
			w.pause()
		}
		if w.reg[item].write(ref.Holder, ref.Fence) {
			return
		}
		// The register has seen a newer fence: the lease is gone.
		w.lost(item)
	}
}

func (w *linWorker) updateRef(item string, ref lease.Ref) bool {
	w.seq++
	mu := linMutation{ready: -1, size: -1}
	var m lease.Mutation
	if w.rng.IntN(4) > 0 {
		mu.commit = fmt.Sprintf("%s.%d", ref.Holder, w.seq)
		m.Commit = &mu.commit
	}
	if w.rng.IntN(2) == 0 {
		ready := w.rng.IntN(2) == 0
		mu.ready = 0
		if ready {
			mu.ready = 1
		}
		m.Ready = &ready
	}
	if w.rng.IntN(10) == 0 {
		mu.size = []int64{0, 15, 25}[w.rng.IntN(3)]
		m.Size = &mu.size
	}
	if w.rng.IntN(20) == 0 {
		mu.draining, m.Draining = true, true
	}
	if v, ok := w.version[item]; ok && w.rng.IntN(4) == 0 {
		mu.ifVersion, mu.hasIfVer = v, true
		m.IfVersion = &v
	}
	in := &linInput{kind: opUpdate, item: item, refs: []lease.Ref{ref}, mut: mu, call: w.now()}
	r, err := w.s.Update(w.ctx, ref, m)
	in.ret = w.now()
	e := w.errOf("Update", err)
	w.record(in, &linOutput{err: e, row: r})
	switch e {
	case nil:
		w.stats.Updates++
		w.saw(item, &r)
		return true
	case lease.ErrVersionConflict:
	default:
		w.refused(item, ref, e)
	}
	return false
}

// stale makes an owner call with a ref that is probably not current: one
// of the client's old grants of item, or its current one with the next
// fence, or another holder's name.
func (w *linWorker) stale(item string) {
	var ref lease.Ref
	old := w.old[item]
	switch cur, held := w.held[item]; {
	case len(old) > 0 && w.rng.IntN(3) > 0:
		ref = old[w.rng.IntN(len(old))]
	case held && w.rng.IntN(2) == 0:
		ref = cur
		ref.Fence++
	case held:
		ref = cur
		ref.Holder = fmt.Sprintf("n%d-%s", w.id+1, item) // another client's name
	default:
		return
	}
	switch w.rng.IntN(3) {
	case 0:
		w.updateRef(item, ref)
	case 1:
		w.releaseRef(item, ref)
	default:
		in := &linInput{kind: opRenew, item: item, refs: []lease.Ref{ref}, batch: 1, call: w.now()}
		rs, err := w.s.Renew(w.ctx, ref)
		in.ret = w.now()
		out := &linOutput{err: w.errOf("Renew", err)}
		if out.err == nil {
			rn := rs[0]
			rn.Err = w.errOf("Renew", rn.Err)
			out.renewals = []lease.Renewal{rn}
			if rn.Err == nil {
				w.stats.Renewals++
			} else {
				w.refused(item, ref, rn.Err)
			}
		}
		w.record(in, out)
	}
}
