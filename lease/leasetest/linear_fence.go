package leasetest

import (
	"errors"
	"fmt"
	"sort"

	"github.com/indexkit/indexkit/lease"
)

// CheckFences checks the history for what a fence-aware resource relies on,
// directly on the recorded operations (no model):
//
//   - Grants: per item, each fence names one holder (across grants and rows
//     read), and a grant that began after another grant, or a read of a
//     fence, had returned carries a strictly greater fence; no read shows a
//     fence older than one already observed.
//   - The store refuses stale owners: an owner operation (renewal, release,
//     update) that began after a newer fence of its item had been observed
//     was refused, with lease.ErrStaleFence; no owner operation was accepted
//     for a fence and holder the store did not grant; refusals are
//     lease.ErrStaleFence or lease.ErrNotHeld (or lease.ErrVersionConflict
//     for an update).
//   - The register: holders wrote their fence to a register outside the
//     store, which accepts a write only if lease.CheckFence passes against
//     the highest fence it has accepted (the way a downstream resource
//     uses fences). Its accepted writes are in fence order by
//     construction; the check is that each fence written was granted by the
//     store to the holder that wrote it, so no two holders ever had
//     accepted writes under one fence, interleaved or not.
//
// Operations of unknown outcome ([WithUnknownOutcome]) are left out: they
// observed nothing, and whatever they did shows in the operations after
// them.
//
// It returns nil, or the violations joined, each wrapping
// [ErrFenceViolation].
func (h *History) CheckFences() error {
	type obs struct {
		fence     lease.Fence
		holder    string // "" when a row shows the fence without an owner
		grant     bool
		call, ret int64
		what      string
	}
	type ownerOp struct {
		kind      linKind
		ref       lease.Ref
		err       error
		call, ret int64
	}
	observed := map[string][]obs{}
	owners := map[string][]ownerOp{}
	for _, op := range h.ops {
		in, out := op.Input.(*linInput), op.Output.(*linOutput)
		if isUnknown(out.err) {
			continue // it observed nothing, and may or may not have acted
		}
		add := func(f lease.Fence, holder string, grant bool) {
			if f == 0 {
				return
			}
			observed[in.item] = append(observed[in.item], obs{f, holder, grant, in.call, in.ret, describe(in, out)})
		}
		switch in.kind {
		case opGet:
			if out.err == nil {
				add(out.row.Fence, out.row.Owner, false)
			}
		case opBid:
			if r := out.bid.Result; out.err == nil && r != nil && r.Grant != nil {
				add(r.Grant.Fence, r.Grant.Holder, true)
			}
		case opEvaluate:
			if g := out.eval.Grant; out.err == nil && g != nil {
				add(g.Fence, g.Holder, true)
			}
		case opRenew:
			for i, ref := range in.refs {
				if out.err == nil {
					owners[in.item] = append(owners[in.item], ownerOp{in.kind, ref, out.renewals[i].Err, in.call, in.ret})
				}
			}
		case opRelease:
			owners[in.item] = append(owners[in.item], ownerOp{in.kind, in.refs[0], out.err, in.call, in.ret})
		case opUpdate:
			owners[in.item] = append(owners[in.item], ownerOp{in.kind, in.refs[0], out.err, in.call, in.ret})
			if out.err == nil {
				add(out.row.Fence, out.row.Owner, false)
			}
		}
	}

	var errs []error
	fail := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrFenceViolation}, args...)...))
		}
	}
	for _, it := range linItems {
		id := it.ID
		obsv := observed[id]
		// Each fence names one holder.
		holderOf := map[lease.Fence]string{}
		for _, o := range obsv {
			if o.holder == "" {
				continue
			}
			if prev, ok := holderOf[o.fence]; ok && prev != o.holder {
				fail("item %s: fence %d granted to %s and to %s (%s)", id, o.fence, prev, o.holder, o.what)
			}
			holderOf[o.fence] = o.holder
		}
		// Fences never go back in real time, and grants move them forward.
		byRet := append([]obs(nil), obsv...)
		sort.Slice(byRet, func(i, j int) bool { return byRet[i].ret < byRet[j].ret })
		prefix := make([]lease.Fence, len(byRet)) // highest fence among byRet[:i+1]
		var hi lease.Fence
		for i, o := range byRet {
			hi = max(hi, o.fence)
			prefix[i] = hi
		}
		// newest returns the highest fence observed by an operation that
		// returned before t, and the operation.
		newest := func(t int64) lease.Fence {
			i := sort.Search(len(byRet), func(i int) bool { return byRet[i].ret >= t })
			if i == 0 {
				return 0
			}
			return prefix[i-1]
		}
		for _, o := range obsv {
			n := newest(o.call)
			switch {
			case o.grant && o.fence <= n:
				fail("item %s: grant of fence %d (%s) after fence %d had been observed", id, o.fence, o.what, n)
			case o.fence < n:
				fail("item %s: fence %d read (%s) after fence %d had been observed", id, o.fence, o.what, n)
			}
		}
		// The store refuses stale owners.
		for _, op := range owners[id] {
			n := newest(op.call)
			switch {
			case op.err == nil && op.ref.Fence < n:
				fail("item %s: %v by %s with fence %d accepted after fence %d had been observed", id, op.kind, op.ref.Holder, op.ref.Fence, n)
			case op.err == nil && holderOf[op.ref.Fence] != "" && holderOf[op.ref.Fence] != op.ref.Holder:
				fail("item %s: %v by %s with fence %d accepted, but the fence was granted to %s", id, op.kind, op.ref.Holder, op.ref.Fence, holderOf[op.ref.Fence])
			case op.err != nil && op.ref.Fence < n && op.err != lease.ErrStaleFence:
				fail("item %s: %v by %s with fence %d refused with %v after fence %d had been observed, want %v", id, op.kind, op.ref.Holder, op.ref.Fence, op.err, n, lease.ErrStaleFence)
			case op.err != nil && op.err != lease.ErrStaleFence && op.err != lease.ErrNotHeld &&
				(op.kind != opUpdate || op.err != lease.ErrVersionConflict):
				fail("item %s: %v by %s with fence %d refused with %v", id, op.kind, op.ref.Holder, op.ref.Fence, op.err)
			}
		}
		// The register.
		var last lease.Fence
		writer := map[lease.Fence]string{}
		for _, w := range h.reg[id].log {
			if !w.accepted {
				continue
			}
			if w.fence < last {
				fail("item %s: register accepted fence %d after %d", id, w.fence, last)
			}
			last = w.fence
			if prev, ok := writer[w.fence]; ok && prev != w.holder {
				fail("item %s: register accepted writes of %s and %s under fence %d", id, prev, w.holder, w.fence)
			}
			writer[w.fence] = w.holder
			if g, ok := holderOf[w.fence]; !ok || g != w.holder {
				fail("item %s: register accepted a write of %s under fence %d, which the store granted to %q", id, w.holder, w.fence, g)
			}
		}
	}
	return errors.Join(errs...)
}
