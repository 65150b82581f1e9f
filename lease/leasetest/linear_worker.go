package leasetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/indexkit/indexkit/lease"
)

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
	// unknown classes the errors that leave a call's outcome unknown
	// (WithUnknownOutcome); nil: none.
	unknown func(error) bool

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

// errOf classifies err: nil, the sentinel of package lease it wraps, or
// an *unknownOutcome if w.unknown classes it as indeterminate. Any other
// error fails the test.
func (w *linWorker) errOf(what string, err error) error {
	if err == nil {
		return nil
	}
	c := class(err)
	if isSentinel(c) {
		return c
	}
	if w.unknown != nil && w.unknown(err) {
		return &unknownOutcome{err}
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
			// A paused holder's renewal loop fires as it wakes: the
			// history renews leases that have lapsed, which a store
			// must refuse.
			w.renew(item)
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
