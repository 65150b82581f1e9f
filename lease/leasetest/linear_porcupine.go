package leasetest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/indexkit/indexkit/lease"
)

// porcupine returns the model for porcupine, partitioned by item.
func (m *linModel) porcupine() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			byItem := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range ops {
				id := op.Input.(*linInput).item
				if _, ok := byItem[id]; !ok {
					order = append(order, id)
				}
				byItem[id] = append(byItem[id], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, id := range order {
				out = append(out, byItem[id])
			}
			return out
		},
		Init: func() []any { return []any{linState{}} },
		Step: func(state, input, output any) []any {
			next := m.step(state.(linState), input.(*linInput), output.(*linOutput))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal: func(a, b any) bool {
			x, y := a.(linState), b.(linState)
			return x.equal(&y)
		},
		Hash: func(s any) uint64 {
			x := s.(linState)
			return x.hash()
		},
		DescribeOperation: func(input, output any) string {
			return describe(input.(*linInput), output.(*linOutput))
		},
		DescribeState: func(s any) string {
			x := s.(linState)
			return x.String()
		},
	}
	return nm.ToModel()
}

func describe(in *linInput, out *linOutput) string {
	var b strings.Builder
	ref := func(r lease.Ref) string { return fmt.Sprintf("%s#%d", r.Holder, r.Fence) }
	switch in.kind {
	case opGet:
		fmt.Fprintf(&b, "Get(%s)", in.item)
	case opBid:
		fmt.Fprintf(&b, "Bid(%s, %s, %d)", in.item, in.holder, in.free)
	case opEvaluate:
		fmt.Fprintf(&b, "Evaluate(%s)", in.item)
	case opRenew:
		var rs []string
		for _, r := range in.refs {
			rs = append(rs, ref(r))
		}
		fmt.Fprintf(&b, "Renew(%s: %s of %d)", in.item, strings.Join(rs, ", "), in.batch)
	case opRelease:
		fmt.Fprintf(&b, "Release(%s: %s)", in.item, ref(in.refs[0]))
	case opUpdate:
		fmt.Fprintf(&b, "Update(%s: %s", in.item, ref(in.refs[0]))
		mu := &in.mut
		if mu.commit != "" {
			fmt.Fprintf(&b, " commit=%s", mu.commit)
		}
		if mu.ready >= 0 {
			fmt.Fprintf(&b, " ready=%v", mu.ready == 1)
		}
		if mu.size >= 0 {
			fmt.Fprintf(&b, " size=%d", mu.size)
		}
		if mu.draining {
			b.WriteString(" draining")
		}
		if mu.hasIfVer {
			fmt.Fprintf(&b, " if-v%d", mu.ifVersion)
		}
		b.WriteString(")")
	}
	b.WriteString(" → ")
	if out.err != nil {
		b.WriteString(strings.TrimPrefix(out.err.Error(), "lease: "))
		return b.String()
	}
	switch in.kind {
	case opGet, opUpdate:
		r := &out.row
		fmt.Fprintf(&b, "%v owner=%q fence=%d v%d commit=%q ready=%v round=%d bids=%d", r.State, r.Owner, r.Fence, r.Version, r.Commit, r.Ready, r.Round, r.Bids)
	case opBid:
		fmt.Fprintf(&b, "round %d seq %d", out.bid.Round, out.bid.Seq)
		if out.bid.Result != nil {
			b.WriteString("; " + describeResult(out.bid.Result))
		}
	case opEvaluate:
		b.WriteString(describeResult(&out.eval))
	case opRenew:
		var rs []string
		for _, r := range out.renewals {
			if r.Err != nil {
				rs = append(rs, strings.TrimPrefix(class(r.Err).Error(), "lease: "))
			} else {
				rs = append(rs, "ok")
			}
		}
		b.WriteString(strings.Join(rs, ", "))
	default:
		b.WriteString("ok")
	}
	return b.String()
}

func describeResult(r *lease.AuctionResult) string {
	if r.Grant != nil {
		return fmt.Sprintf("%v to %s fence %d (round %d, %d bids)", r.Outcome, r.Grant.Holder, r.Grant.Fence, r.Round, r.Bids)
	}
	return fmt.Sprintf("%v (round %d, %d bids)", r.Outcome, r.Round, r.Bids)
}

// errUnexpected marks an error that is not one of the sentinels an
// operation may return; it fails the history.
var errUnexpected = errors.New("unexpected error")

// unknownOutcome is the error of a call whose outcome the client never
// learnt: its cause is an error that [WithUnknownOutcome] classed as
// indeterminate. The model lets the call take effect with any result, or
// not at all.
type unknownOutcome struct{ cause error }

func (e *unknownOutcome) Error() string { return "unknown outcome: " + e.cause.Error() }

func isUnknown(err error) bool {
	_, ok := err.(*unknownOutcome)
	return ok
}
