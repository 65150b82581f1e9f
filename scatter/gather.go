package scatter

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/scatter/find"
)

// Gather is a [find.Backend] that fans each request out to many backends
// concurrently and merges their answers; see the package documentation.
// It is safe for concurrent use, starts no goroutine outside a call, and
// needs no closing.
type Gather struct {
	backends []find.Backend
	names    []string
	breakers []*breaker // nil when disabled
	counters []backendCounters
	timeout  time.Duration
	ring     *Ring
	hedge    time.Duration
	cache    *resultCache
	hooks    GatherHooks

	queries       atomic.Uint64
	partial       atomic.Uint64
	disagreements atomic.Uint64
}

type backendCounters struct {
	requests, failures, timeouts, skipped atomic.Uint64
}

var _ find.Backend = (*Gather)(nil)

// NewGather returns a Gather over backends (at least one).
func NewGather(backends []find.Backend, opts ...GatherOption) (*Gather, error) {
	def, _ := BreakerConfig{}.withDefaults()
	c := &gatherConfig{timeout: DefaultBackendTimeout, breaker: def}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if len(backends) == 0 {
		return nil, fmt.Errorf("%w: no backends", ErrInvalidOption)
	}
	for i, b := range backends {
		if b == nil {
			return nil, fmt.Errorf("%w: backend %d is nil", ErrInvalidOption, i)
		}
	}
	if c.ring != nil && c.ring.Len() != len(backends) {
		return nil, fmt.Errorf("%w: ring of %d backends for %d backends", ErrInvalidOption, c.ring.Len(), len(backends))
	}
	names := c.names
	switch {
	case names != nil:
		if len(names) != len(backends) {
			return nil, fmt.Errorf("%w: %d names for %d backends", ErrInvalidOption, len(names), len(backends))
		}
	case c.ring != nil:
		names = c.ring.Names()
	default:
		names = make([]string, len(backends))
		for i, b := range backends {
			if s, ok := b.(fmt.Stringer); ok {
				names[i] = s.String()
			} else if u, ok := b.(interface{ URL() string }); ok {
				names[i] = u.URL()
			} else {
				names[i] = "#" + strconv.Itoa(i)
			}
		}
	}
	g := &Gather{
		backends: slices.Clone(backends),
		names:    names,
		counters: make([]backendCounters, len(backends)),
		timeout:  c.timeout,
		ring:     c.ring,
		hedge:    c.hedge,
		hooks:    c.hooks,
	}
	if !c.breaker.Disabled {
		g.breakers = make([]*breaker, len(backends))
		for i := range g.breakers {
			g.breakers[i] = newBreaker(c.breaker)
		}
	}
	if c.cacheEntries > 0 {
		g.cache = newResultCache(c.cacheEntries, c.cacheTTL, c.cacheNegTTL)
	}
	return g, nil
}

// Find asks every backend for mh at once and yields each result as soon as
// any backend yields it, without waiting for the others. With [WithRing],
// it asks only the owners of mh and returns the first complete answer of
// one of them instead, as the package documentation's "Ring mode" says;
// what follows is the mode without a ring.
//
// Results are de-duplicated by (provider ID, context ID), compared
// exactly: the first result seen for a pair is yielded and later ones are
// dropped, even when their metadata differs (counted in
// GatherStats.Disagreements and reported to GatherHooks.OnDisagreement).
// Every other result of every backend is kept.
//
// When every backend asked answered, Find ends without an error; when none
// had results, that is "not found". Otherwise it ends by yielding a
// [*find.PartialError]: Answered of Total backends answered, TimedOut ran out of
// time, and Err joins the errors of the others (in backend order), wrapping
// [ErrBreakerOpen] for a backend skipped because its breaker was open. The
// results yielded before it are real.
//
// Stopping the iteration cancels the requests still outstanding; Find
// returns only after every goroutine it started has exited. Yielded results
// may be shared with the cache and with the backends and must not be
// modified.
func (g *Gather) Find(ctx context.Context, mh multihash.Multihash) iter.Seq2[find.ProviderResult, error] {
	return func(yield func(find.ProviderResult, error) bool) {
		g.queries.Add(1)
		if g.cache != nil {
			if rs, ok := g.cache.get(mh, time.Now()); ok {
				for _, r := range rs {
					if !yield(r, nil) {
						return
					}
				}
				return
			}
		}
		g.find(ctx, mh, yield)
	}
}

// call is one backend's part of a request.
type call struct {
	backend int
	ticket  ticket
}

// fanMsg is a result of a backend, or, with done set, the end of its part.
type fanMsg struct {
	backend  int
	done     bool
	timedOut bool
	res      find.ProviderResult
	err      error
}

// fanIn is an unbounded queue from the backends' goroutines to the caller's.
// Unbounded so that a slow reader never holds a backend up past its
// deadline: backends are timed by what they do, not by what the caller
// does; each backend's answer is bounded by the backend.
type fanIn struct {
	mu   sync.Mutex
	q    []fanMsg
	wake chan struct{}
}

func (f *fanIn) push(m fanMsg) {
	f.mu.Lock()
	f.q = append(f.q, m)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// takeOr is take, but gives up when timer fires first (ok false).
func (f *fanIn) takeOr(spare []fanMsg, timer <-chan time.Time) (msgs []fanMsg, ok bool) {
	for {
		f.mu.Lock()
		if len(f.q) > 0 {
			b := f.q
			f.q = spare[:0]
			f.mu.Unlock()
			return b, true
		}
		f.mu.Unlock()
		select {
		case <-f.wake:
		case <-timer:
			return nil, false
		}
	}
}

// take waits for messages and returns them, leaving spare as the queue.
func (f *fanIn) take(spare []fanMsg) []fanMsg {
	for {
		f.mu.Lock()
		if len(f.q) > 0 {
			b := f.q
			f.q = spare[:0]
			f.mu.Unlock()
			return b
		}
		f.mu.Unlock()
		<-f.wake
	}
}

func (g *Gather) find(ctx context.Context, mh multihash.Multihash, yield func(find.ProviderResult, error) bool) {
	if g.ring != nil {
		g.findRing(ctx, mh, yield)
		return
	}
	var tbuf [16]int
	targets := tbuf[:0]
	for i := range g.backends {
		targets = append(targets, i)
	}

	var pe partial
	calls := make([]call, 0, len(targets))
	for _, i := range targets {
		if t, ok := g.allow(i); ok {
			calls = append(calls, call{i, t})
		} else {
			pe.add(i, g.skipped(i), false)
		}
	}

	m := merger{g: g, mh: mh, collect: g.cache != nil}
	stopped := false
	if len(calls) > 0 {
		qctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		f := &fanIn{q: make([]fanMsg, 0, 4*len(calls)), wake: make(chan struct{}, 1)}
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Go(func() { g.findOne(ctx, qctx, c, mh, f) })
		}
		var spare []fanMsg
		for remaining := len(calls); remaining > 0; {
			batch := f.take(spare)
			for _, msg := range batch {
				switch {
				case msg.done:
					remaining--
					if msg.err != nil {
						pe.add(msg.backend, msg.err, msg.timedOut)
					}
				case stopped:
				case m.add(msg.res, msg.backend) && !yield(msg.res, nil):
					stopped = true
					cancel()
				}
			}
			spare = batch
		}
		wg.Wait()
	}
	if stopped {
		return
	}
	if err := pe.err(len(targets)); err != nil {
		g.partial.Add(1)
		yield(find.ProviderResult{}, err)
		return
	}
	if g.cache != nil {
		g.cache.put(mh, m.results, time.Now())
	}
}

// findOne runs one backend's part of a Find in its own goroutine.
func (g *Gather) findOne(ctx, qctx context.Context, c call, mh multihash.Multihash, f *fanIn) {
	start := time.Now()
	var err error
	for r, e := range g.backends[c.backend].Find(qctx, mh) {
		if e != nil {
			err = e
			break
		}
		f.push(fanMsg{backend: c.backend, res: r})
	}
	err, timedOut := g.settle(ctx, qctx, c, err, time.Since(start))
	f.push(fanMsg{backend: c.backend, done: true, err: err, timedOut: timedOut})
}

// settle records how a backend's part of a request ended, in its breaker,
// counters and hooks, and returns its error, named, and whether it ran out
// of time. ctx is the caller's context, qctx the one given to the backend.
func (g *Gather) settle(ctx, qctx context.Context, c call, err error, d time.Duration) (error, bool) {
	i := c.backend
	g.counters[i].requests.Add(1)
	o, timedOut := outcomeSuccess, false
	if err != nil {
		switch {
		case ctx.Err() != nil: // the caller gave up
			o, timedOut = outcomeAbandoned, errors.Is(ctx.Err(), context.DeadlineExceeded)
		case errors.Is(qctx.Err(), context.DeadlineExceeded): // our deadline
			o, timedOut = outcomeFailure, true
		case qctx.Err() != nil: // stopped early
			o = outcomeAbandoned
		default:
			o = outcomeFailure
		}
		if timedOut {
			err = fmt.Errorf("scatter: backend %s: no answer within %v: %w", g.names[i], d.Round(time.Millisecond), err)
		} else {
			err = fmt.Errorf("scatter: backend %s: %w", g.names[i], err)
		}
	}
	if o == outcomeFailure {
		g.counters[i].failures.Add(1)
		if timedOut {
			g.counters[i].timeouts.Add(1)
		}
	}
	if g.breakers != nil {
		if tr := g.breakers[i].done(c.ticket, o, time.Now()); tr.changed && g.hooks.OnStateChange != nil {
			g.hooks.OnStateChange(i, tr.from, tr.to)
		}
	}
	if g.hooks.OnBackendDone != nil {
		g.hooks.OnBackendDone(i, d, err)
	}
	return err, timedOut
}

// allow asks backend i's breaker whether it may be asked now.
func (g *Gather) allow(i int) (ticket, bool) {
	if g.breakers == nil {
		return ticket{}, true
	}
	t, ok, tr := g.breakers[i].allow(time.Now())
	if tr.changed && g.hooks.OnStateChange != nil {
		g.hooks.OnStateChange(i, tr.from, tr.to)
	}
	return t, ok
}

// skipped counts backend i as skipped and returns its error.
func (g *Gather) skipped(i int) error {
	g.counters[i].skipped.Add(1)
	return fmt.Errorf("scatter: backend %s: %w", g.names[i], ErrBreakerOpen)
}

// partial accumulates the backends that did not answer a request.
type partial struct {
	errs     []backendErr
	timedOut int
}

type backendErr struct {
	backend int
	err     error
}

func (p *partial) add(backend int, err error, timedOut bool) {
	p.errs = append(p.errs, backendErr{backend, err})
	if timedOut {
		p.timedOut++
	}
}

// err returns nil if every one of total backends answered, else a
// *find.PartialError.
func (p *partial) err(total int) error {
	if len(p.errs) == 0 {
		return nil
	}
	slices.SortFunc(p.errs, func(a, b backendErr) int { return cmp.Compare(a.backend, b.backend) })
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e.err
	}
	return &find.PartialError{Answered: total - len(p.errs), Total: total, TimedOut: p.timedOut, Err: errors.Join(errs...)}
}

// merger de-duplicates the results of one Find.
type merger struct {
	g       *Gather
	mh      multihash.Multihash
	seen    map[resultKey][]byte // metadata of the first result of each key
	collect bool
	results []find.ProviderResult // what was yielded, when collect
}

type resultKey struct {
	provider  peer.ID
	contextID string
}

// add reports whether r is the first result for its (provider, context).
func (m *merger) add(r find.ProviderResult, backend int) bool {
	var id peer.ID
	if r.Provider != nil {
		id = r.Provider.ID
	}
	if m.seen == nil {
		m.seen = make(map[resultKey][]byte)
	}
	k := resultKey{id, string(r.ContextID)}
	if md, ok := m.seen[k]; ok {
		if !bytes.Equal(md, r.Metadata) {
			m.g.disagreements.Add(1)
			if h := m.g.hooks.OnDisagreement; h != nil {
				h(m.mh, id, r.ContextID, backend)
			}
		}
		return false
	}
	m.seen[k] = r.Metadata
	if m.collect {
		m.results = append(m.results, r)
	}
	return true
}

// each runs fn for every backend whose breaker lets it, concurrently, each
// under the backend timeout, and returns a *find.PartialError unless all
// answered. fn returns nil when the backend answered.
func (g *Gather) each(ctx context.Context, fn func(ctx context.Context, backend int) error) error {
	qctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	errs := make([]error, len(g.backends))
	timed := make([]bool, len(g.backends))
	var wg sync.WaitGroup
	for i := range g.backends {
		t, ok := g.allow(i)
		if !ok {
			errs[i] = g.skipped(i)
			continue
		}
		wg.Go(func() {
			start := time.Now()
			err := fn(qctx, i)
			errs[i], timed[i] = g.settle(ctx, qctx, call{i, t}, err, time.Since(start))
		})
	}
	wg.Wait()
	var pe partial
	for i, err := range errs {
		if err != nil {
			pe.add(i, err, timed[i])
		}
	}
	return pe.err(len(g.backends))
}
