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
// The owners are asked at once, or with [WithHedge] one after the other:
// the next when the hedge delay has passed without a complete answer, or
// at once when every owner asked so far has failed. The first owner to
// yield a result leads: its results are yielded as they arrive
// (de-duplicated), the others' are held. When an owner completes, its held
// results not yet yielded follow and the answer ends; when the leader
// fails, the owner holding the most results takes over, its held results
// yielded first. Owners that hold the same data thus give exactly the
// winner's answer; what a failed leader yielded before failing stays
// yielded (it is real data of a replica).
func (g *Gather) findRing(ctx context.Context, mh multihash.Multihash, yield func(find.ProviderResult, error) bool) {
	var obuf [16]int
	owners := g.ring.AppendOwners(obuf[:0], mh)

	// rctx ends every owner's request once one has won (or the caller
	// stopped); each owner has its own deadline under it, so that settle
	// tells our deadline (a failure) from a cancellation (abandoned).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		pe       partial
		wg       sync.WaitGroup
		f        = &fanIn{q: make([]fanMsg, 0, 8), wake: make(chan struct{}, 1)}
		next     int // owners[next] is the next owner to ask
		inflight int
		held     = make([][]find.ProviderResult, len(owners)) // by index in owners
		live     = make([]bool, len(owners))
	)
	// launch asks the next owner whose breaker lets it, and reports
	// whether there was one.
	launch := func() bool {
		for next < len(owners) {
			i := next
			b := owners[i]
			next++
			t, ok := g.allow(b)
			if !ok {
				pe.add(b, g.skipped(b), false)
				continue
			}
			live[i] = true
			inflight++
			wg.Go(func() {
				octx, ocancel := context.WithTimeout(rctx, g.timeout)
				defer ocancel()
				g.findOne(ctx, octx, call{b, t}, mh, f)
			})
			return true
		}
		return false
	}
	var hedge *time.Timer
	var hedgeC <-chan time.Time
	if g.hedge > 0 {
		launch()
		if next < len(owners) {
			hedge = time.NewTimer(g.hedge)
			defer hedge.Stop()
			hedgeC = hedge.C
		}
	} else {
		for launch() {
		}
	}

	m := merger{g: g, mh: mh, collect: g.cache != nil}
	won, stopped := false, false
	// emitOne yields r through the merger, and reports false once the
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
	slot := func(backend int) int {
		for i, o := range owners {
			if o == backend {
				return i
			}
		}
		return -1
	}
	leader := -1 // slot of the owner whose results are yielded as they come
	var spare []fanMsg
	for inflight > 0 {
		batch, ok := f.takeOr(spare, hedgeC)
		if !ok { // the hedge delay passed without a complete answer
			if !won && !stopped && launch() && next < len(owners) {
				hedge.Reset(g.hedge)
			} else {
				hedgeC = nil
			}
			continue
		}
		for _, msg := range batch {
			s := slot(msg.backend)
			switch {
			case msg.done:
				inflight--
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
					for i := range owners {
						if live[i] && (leader < 0 || len(held[i]) > len(held[leader])) {
							leader = i
						}
					}
					if leader >= 0 {
						rs := held[leader]
						held[leader] = nil
						emit(rs, owners[leader])
					}
				}
				if inflight == 0 {
					launch() // every owner asked so far failed: the next, now
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
