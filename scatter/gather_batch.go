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
// cancelled. A multihash all of whose owners failed gets a
// [*find.PartialError] (Answered 0 of its owners). A backend's request
// counts once in its breaker and counters, as failed when any multihash of
// it failed.
func (g *Gather) FindBatch(ctx context.Context, mhs []multihash.Multihash) []find.BatchResult {
	if g.ring == nil {
		return find.FindEach(ctx, g, mhs)
	}
	out := make([]find.BatchResult, len(mhs))
	g.queries.Add(uint64(len(mhs)))

	// Per multihash: answered yet, owners still asked, and the failures.
	type keyState struct {
		done    bool
		pending int
		owners  int
		pe      partial
	}
	keys := make([]keyState, len(mhs))
	open := 0
	perBackend := make([][]int, len(g.backends)) // key indexes owned by each backend
	var obuf [16]int
	now := time.Now()
	for k, mh := range mhs {
		if g.cache != nil {
			if rs, ok := g.cache.get(mh, now); ok {
				out[k].Results, keys[k].done = rs, true
				continue
			}
		}
		owners := g.ring.AppendOwners(obuf[:0], mh)
		keys[k].owners = len(owners)
		keys[k].pending = len(owners)
		for _, o := range owners {
			perBackend[o] = append(perBackend[o], k)
		}
		open++
	}

	// fail records that backend could not answer key k, and settles k if
	// that was its last owner.
	fail := func(k, backend int, err error, timedOut bool) {
		ks := &keys[k]
		ks.pending--
		if ks.done {
			return
		}
		ks.pe.add(backend, err, timedOut)
		if ks.pending == 0 {
			ks.done = true
			open--
			out[k].Results, out[k].Err = nil, ks.pe.err(ks.owners)
			g.partial.Add(1)
		}
	}

	type batchMsg struct {
		backend  int
		answers  []find.BatchResult
		err      error // the request's error, named, when it failed
		timedOut bool
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan batchMsg, len(g.backends))
	var wg sync.WaitGroup
	calls := 0
	for b, ks := range perBackend {
		if len(ks) == 0 {
			continue
		}
		t, ok := g.allow(b)
		if !ok {
			err := g.skipped(b)
			for _, k := range ks {
				fail(k, b, err, false)
			}
			continue
		}
		calls++
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
			msgs <- batchMsg{b, answers, err, timedOut}
		})
	}
	for ; calls > 0; calls-- {
		m := <-msgs
		for i, k := range perBackend[m.backend] {
			a := m.answers[i]
			switch {
			case a.Err != nil:
				err := m.err
				if err == nil || !errors.Is(err, a.Err) {
					err = fmt.Errorf("scatter: backend %s: %w", g.names[m.backend], a.Err)
				}
				fail(k, m.backend, err, m.timedOut)
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
