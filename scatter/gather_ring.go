package scatter

import (
	"context"
	"sync"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

// findRing is Find with a ring: every owner of mh holds the whole answer
// for it, so the first owner to answer completely (results or "not
// found") gives the answer, and the others are cancelled. An owner that
// fails does not count; only when every owner has failed does the answer
// end with a *find.PartialError.
//
// The owners are asked at once. The first owner to yield a result leads:
// its results are yielded as they arrive (de-duplicated), the others' are
// held. When an owner completes, its held results not yet yielded follow
// and the answer ends; when the leader fails, the owner holding the most
// results takes over, its held results yielded first. Owners that hold the
// same data thus give exactly the winner's answer; what a failed leader
// yielded before failing stays yielded (it is real data of a replica).
func (g *Gather) findRing(ctx context.Context, mh multihash.Multihash, yield func(find.ProviderResult, error) bool) {
	var obuf [16]int
	owners := g.ring.AppendOwners(obuf[:0], mh)

	var pe partial
	calls := make([]call, 0, len(owners))
	for _, i := range owners {
		if t, ok := g.allow(i); ok {
			calls = append(calls, call{i, t})
		} else {
			pe.add(i, g.skipped(i), false)
		}
	}

	m := merger{g: g, mh: mh, collect: g.cache != nil}
	won, stopped := false, false
	if len(calls) > 0 {
		// rctx ends every owner's request once one has won (or the caller
		// stopped); each owner has its own deadline under it, so that
		// settle tells our deadline (a failure) from a cancellation
		// (abandoned).
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		f := &fanIn{q: make([]fanMsg, 0, 4*len(calls)), wake: make(chan struct{}, 1)}
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Go(func() {
				octx, ocancel := context.WithTimeout(rctx, g.timeout)
				defer ocancel()
				g.findOne(ctx, octx, c, mh, f)
			})
		}
		held := make([][]find.ProviderResult, len(calls))
		live := make([]bool, len(calls))
		for i := range live {
			live[i] = true
		}
		slot := func(backend int) int {
			for i, c := range calls {
				if c.backend == backend {
					return i
				}
			}
			return -1
		}
		// emit yields r through the merger, and reports false once the
		// caller has stopped.
		emitOne := func(r find.ProviderResult, backend int) bool {
			if m.add(r, backend) && !yield(r, nil) {
				stopped = true
				cancel()
				return false
			}
			return true
		}
		emit := func(rs []find.ProviderResult, backend int) {
			for _, r := range rs {
				if !emitOne(r, backend) {
					return
				}
			}
		}
		leader := -1 // slot of the owner whose results are yielded as they come
		var spare []fanMsg
		for remaining := len(calls); remaining > 0; {
			batch := f.take(spare)
			for _, msg := range batch {
				s := slot(msg.backend)
				switch {
				case msg.done:
					remaining--
					live[s] = false
					if won || stopped {
						continue
					}
					if msg.err == nil {
						won = true
						cancel()
						if s != leader {
							emit(held[s], msg.backend)
						}
						continue
					}
					pe.add(msg.backend, msg.err, msg.timedOut)
					held[s] = nil
					if s == leader {
						leader = -1
						for i := range calls {
							if live[i] && (leader < 0 || len(held[i]) > len(held[leader])) {
								leader = i
							}
						}
						if leader >= 0 {
							rs := held[leader]
							held[leader] = nil
							emit(rs, calls[leader].backend)
						}
					}
				case won || stopped:
				case leader < 0 || leader == s:
					leader = s
					emitOne(msg.res, msg.backend)
				default:
					held[s] = append(held[s], msg.res)
				}
			}
			spare = batch
		}
		wg.Wait()
	}
	if stopped {
		return
	}
	if !won {
		g.partial.Add(1)
		yield(find.ProviderResult{}, pe.err(len(owners)))
		return
	}
	if g.cache != nil {
		g.cache.put(mh, m.results, time.Now())
	}
}
