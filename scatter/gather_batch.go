package scatter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

var _ find.BatchFinder = (*Gather)(nil)

// FindBatch looks every multihash of mhs up and returns one answer per
// multihash, by index, each what [Gather.Find] would have yielded for it
// (a find.Handler serves POST /multihash with it).
//
// Without a ring, it is Find for each multihash, a few at a time.
//
// With [WithRing], the batch is split by owner: each backend is sent, in
// one request (one POST /multihash when it is a [find.Client], see
// [find.BatchFinder]), only the multihashes it owns, all backends at once.
// Each multihash takes the answer of the first of its owners to answer it
// completely; once every multihash has one, the requests still out are
// cancelled. With [WithHedge], each multihash goes to its primary owner
// first; those not answered within the delay go to their next owner, and
// those whose owners asked so far failed go to the next at once (each
// round split by owner in the same way). A multihash all of whose owners
// failed gets a [*find.PartialError] (Answered 0 of its owners). Each
// backend request counts once in the backend's breaker and counters, as
// failed when any multihash of it failed.
func (g *Gather) FindBatch(ctx context.Context, mhs []multihash.Multihash) []find.BatchResult {
	if g.ring == nil {
		return find.FindEach(ctx, g, mhs)
	}
	out := make([]find.BatchResult, len(mhs))
	g.queries.Add(uint64(len(mhs)))
	r := g.ring.Replication()

	// Per multihash: answered yet, owners asked so far (owners[k*r:][:tried])
	// and still out, and the failures.
	type keyState struct {
		done           bool
		tried, pending int
		pe             partial
	}
	keys := make([]keyState, len(mhs))
	owners := make([]int, 0, len(mhs)*r)
	var todo []int // keys to ask of their next owner(s)
	now := time.Now()
	for k, mh := range mhs {
		owners = g.ring.AppendOwners(owners, mh)
		if g.cache != nil {
			if rs, ok := g.cache.get(mh, now); ok {
				out[k].Results, keys[k].done = rs, true
				continue
			}
		}
		todo = append(todo, k)
	}
	open := len(todo)

	// fail records that backend could not answer key k and reports whether
	// k should be asked of its next owner now: no owner of it is still
	// asked. Once every owner has failed, k's answer is partial.
	fail := func(k, backend int, err error, timedOut bool) (next bool) {
		ks := &keys[k]
		ks.pending--
		if ks.done {
			return false
		}
		ks.pe.add(backend, err, timedOut)
		if ks.pending > 0 {
			return false
		}
		if ks.tried < r {
			return true
		}
		ks.done = true
		open--
		out[k].Results, out[k].Err = nil, ks.pe.err(r)
		g.partial.Add(1)
		return false
	}

	type batchMsg struct {
		backend  int
		keys     []int
		answers  []find.BatchResult
		err      error // the request's error, named, when it failed
		timedOut bool
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan batchMsg, len(g.backends))
	var wg sync.WaitGroup
	defer wg.Wait()
	inflight := 0
	// launch asks each key of todo of its next n owners (every owner left
	// when n is r), one request per backend, and returns the keys to ask
	// again at once because a backend's breaker was open.
	perBackend := make(map[int][]int)
	launch := func(todo []int, n int) (again []int) {
		clear(perBackend)
		for _, k := range todo {
			ks := &keys[k]
			for j := 0; j < n && ks.tried < r; j++ {
				b := owners[k*r+ks.tried]
				ks.tried++
				ks.pending++
				perBackend[b] = append(perBackend[b], k)
			}
		}
		for b, ks := range perBackend {
			t, ok := g.allow(b)
			if !ok {
				err := g.skipped(b)
				for _, k := range ks {
					if fail(k, b, err, false) {
						again = append(again, k)
					}
				}
				continue
			}
			inflight++
			sub := make([]multihash.Multihash, len(ks))
			for i, k := range ks {
				sub[i] = mhs[k]
			}
			wg.Go(func() {
				octx, ocancel := context.WithTimeout(rctx, g.timeout)
				defer ocancel()
				start := time.Now()
				answers := g.findBatchOne(octx, b, sub)
				var err error
				for _, a := range answers {
					if a.Err != nil {
						err = a.Err
						break
					}
				}
				err, timedOut := g.settle(ctx, octx, call{b, t}, err, time.Since(start))
				msgs <- batchMsg{b, ks, answers, err, timedOut}
			})
		}
		return again
	}
	// ask launches todo on n owners each, and again at once for the keys
	// a breaker turned away, until none is left.
	ask := func(todo []int, n int) {
		for len(todo) > 0 {
			todo = launch(todo, n)
			n = 1
		}
	}

	var hedgeC <-chan time.Time
	if g.hedge > 0 && r > 1 {
		ask(todo, 1)
		hedge := time.NewTimer(g.hedge)
		defer hedge.Stop()
		hedgeC = hedge.C
	} else {
		ask(todo, r)
	}
	for inflight > 0 {
		select {
		case <-hedgeC: // ask the keys still unanswered of their next owner
			todo = todo[:0]
			more := false
			for k := range keys {
				if !keys[k].done && keys[k].tried < r {
					todo = append(todo, k)
					more = more || keys[k].tried+1 < r
				}
			}
			ask(todo, 1)
			hedgeC = nil
			if more {
				hedgeC = time.After(g.hedge)
			}
			continue
		case m := <-msgs:
			inflight--
			var again []int
			for i, k := range m.keys {
				a := m.answers[i]
				switch {
				case a.Err != nil:
					err := m.err
					if err == nil || !errors.Is(err, a.Err) {
						err = fmt.Errorf("scatter: backend %s: %w", g.names[m.backend], a.Err)
					}
					if fail(k, m.backend, err, m.timedOut) {
						again = append(again, k)
					}
				case keys[k].done:
					keys[k].pending--
				default:
					keys[k].pending--
					keys[k].done = true
					open--
					out[k].Results = a.Results
					if g.cache != nil {
						g.cache.put(mhs[k], a.Results, time.Now())
					}
				}
			}
			ask(again, 1)
		}
		if open == 0 {
			cancel()
		}
	}
	wg.Wait()
	return out
}

// findBatchOne asks backend b for every multihash of mhs: in one call when
// it is a find.BatchFinder, else one Find after the other.
func (g *Gather) findBatchOne(ctx context.Context, b int, mhs []multihash.Multihash) []find.BatchResult {
	var answers []find.BatchResult
	if bf, ok := g.backends[b].(find.BatchFinder); ok {
		answers = bf.FindBatch(ctx, mhs)
	} else {
		answers = make([]find.BatchResult, len(mhs))
		for i, mh := range mhs {
			for r, err := range g.backends[b].Find(ctx, mh) {
				if err != nil {
					answers[i].Err = err
					break
				}
				answers[i].Results = append(answers[i].Results, r)
			}
		}
	}
	if len(answers) != len(mhs) {
		err := fmt.Errorf("batch backend answered %d of %d multihashes", len(answers), len(mhs))
		answers = make([]find.BatchResult, len(mhs))
		for i := range answers {
			answers[i].Err = err
		}
	}
	return answers
}
