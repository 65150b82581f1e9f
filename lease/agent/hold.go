package agent

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/indexkit/indexkit/lease"
)

// won acquires a granted lease and starts its holder goroutine.
func (m *Manager) won(ctx context.Context, ref lease.Ref, row lease.Row) {
	if row.ID == "" {
		r, err := m.s.Get(ctx, ref.Item)
		if err != nil {
			m.c.log.Warn("lease: read won item", "node", m.node, "item", ref.Item, "err", err)
			return
		}
		row = r
	}
	l, err := lease.Acquire(ctx, m.s, ref, lease.WithHolderClock(m.lc.Clock),
		lease.WithHolderHooks(m.c.hooks.Lease), lease.WithHolderSafetyMargin(m.c.margin))
	if err != nil {
		m.c.log.Warn("lease: acquire", "node", m.node, "item", ref.Item, "err", err)
		return
	}
	h := &held{l: l, row: row, want: row, size: row.Size, lastTouch: m.lc.Clock.Now(),
		indexed: make(chan struct{}), refresh: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.held[ref.Item] != nil {
		m.mu.Unlock()
		return
	}
	if m.c.replication {
		g := m.group(ref.Item)
		for item := range m.held {
			if m.group(item) == g {
				// Another slot of the same item is here already (a grant
				// that outlived a lost slot): give this one back.
				m.mu.Unlock()
				if err := l.Release(ctx); err != nil {
					m.c.log.Warn("lease: release second replica", "node", m.node, "item", ref.Item, "err", err)
				}
				m.backOff(ref.Item)
				return
			}
		}
	}
	size, reuse, stale := m.takeKept(ref.Item, row.Commit)
	if reuse {
		h.size, h.reuse = size, true
	}
	m.held[ref.Item] = h
	m.used += h.size
	delete(m.backoff, ref.Item)
	work := m.work
	m.wg.Add(1)
	m.mu.Unlock()
	if stale != "" {
		m.c.idx.Drop(stale) // kept at another commit: before Index builds anew
	}
	m.dropKept(false) // make room for the new item
	m.claimLatency(ref, m.lc.Clock.Now())
	if f := m.c.hooks.Won; f != nil {
		f(ref)
	}
	m.reportHeld()
	go m.hold(work, h)
}

// hold indexes a held item, then waits for the lease to end.
func (m *Manager) hold(work context.Context, h *held) {
	defer m.wg.Done()
	ref := h.l.Ref()
	ictx, cancel := context.WithCancel(work)
	defer cancel()
	m.wg.Go(func() {
		select {
		case <-h.l.Done():
			cancel()
		case <-ictx.Done():
		}
	})

	var size int64
	var err error
	if h.reuse {
		size = h.size
		m.c.log.Info("lease: index reused", "node", m.node, "item", ref.Item, "commit", h.row.Commit, "size", size)
		if f := m.c.hooks.Reused; f != nil {
			f(ref, size)
		}
	} else {
		size, err = m.index(ictx, h.row)
		if f := m.c.hooks.Indexed; f != nil {
			f(ref, size, err)
		}
	}
	close(h.indexed)
	if err == nil {
		ready, now := true, m.lc.Clock.Now()
		_, err = h.l.Update(ictx, lease.Mutation{Ready: &ready, Size: &size, LastIndexed: &now})
	}
	if err != nil {
		if work.Err() == nil && h.l.Err() == nil {
			m.c.log.Warn("lease: index", "node", m.node, "item", ref.Item, "err", err)
			if m.forget(h) {
				_ = h.l.Release(work)
				m.c.idx.Drop(ref.Item)
				m.backOff(ref.Item)
			}
		}
	} else {
		m.mu.Lock()
		if !h.gone {
			m.used += size - h.size
			h.size, h.ready, h.commit = size, true, h.row.Commit
		}
		m.mu.Unlock()
		m.evict(work)
		m.refresh(h.want) // the commit may have changed while indexing
	}

	for {
		select {
		case <-h.l.Done():
			if m.forget(h) {
				m.c.log.Warn("lease: lost", "node", m.node, "item", ref.Item, "err", h.l.Err())
				m.lostIndex(h)
			}
			return
		case <-work.Done():
			return
		case <-h.refresh:
			m.reindex(ictx, work, h)
		}
	}
}

func (m *Manager) index(ctx context.Context, row lease.Row) (int64, error) {
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-m.sem }()
	var span trace.Span
	if m.c.tracer != nil {
		ctx, span = m.c.tracer.Start(ctx, "agent.index", trace.WithAttributes(
			attribute.String("lease.item", row.ID), attribute.String("lease.node", m.node),
			attribute.String("lease.commit", row.Commit)))
	}
	start := m.lc.Clock.Now()
	size, err := m.c.idx.Index(ctx, row)
	if f := m.c.hooks.IndexTook; f != nil {
		f(lease.Ref{Item: row.ID, Holder: m.node, Fence: row.Fence}, m.lc.Clock.Now().Sub(start), err)
	}
	if span != nil {
		span.SetAttributes(attribute.Int64("lease.size", size))
		endSpan(span, err)
	}
	return size, err
}

// forget removes h from the held set, reporting whether it was there.
func (m *Manager) forget(h *held) bool {
	m.mu.Lock()
	item := h.l.Ref().Item
	if h.gone || m.held[item] != h {
		m.mu.Unlock()
		return false
	}
	h.gone = true
	delete(m.held, item)
	m.used -= h.size
	m.mu.Unlock()
	m.reportHeld()
	return true
}

// evict releases and drops indexed, unpinned items, in the policy's
// order, until the node is within its budget.
func (m *Manager) evict(ctx context.Context) {
	m.dropKept(false) // kept indexes go first
	m.mu.Lock()
	var victims []*held
	if m.used > m.c.budget {
		var cands []*held
		for item, h := range m.held {
			if h.ready && !m.pins[item] {
				cands = append(cands, h)
			}
		}
		res := func(h *held) Resident {
			return Resident{Item: h.l.Ref().Item, Size: h.size, LastTouch: h.lastTouch, Touches: h.touches}
		}
		sort.Slice(cands, func(i, j int) bool { return m.c.policy(res(cands[i]), res(cands[j])) })
		for _, h := range cands {
			if m.used <= m.c.budget {
				break
			}
			h.gone = true
			delete(m.held, h.l.Ref().Item)
			m.used -= h.size
			victims = append(victims, h)
		}
	}
	m.mu.Unlock()
	if len(victims) > 0 {
		m.reportHeld()
	}
	for _, h := range victims {
		ref := h.l.Ref()
		if err := h.l.Release(ctx); err != nil {
			m.c.log.Warn("lease: release evicted", "node", m.node, "item", ref.Item, "err", err)
		}
		m.c.idx.Drop(ref.Item)
		m.backOff(ref.Item) // do not win it straight back
		if f := m.c.hooks.Evicted; f != nil {
			f(ref, h.size)
		}
	}
}

// drainAll drains every held lease at once, each bounded by the drain
// timeout.
func (m *Manager) drainAll(ctx context.Context) {
	m.mu.Lock()
	hs := make([]*held, 0, len(m.held))
	for _, h := range m.held {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	// The store calls get the TTL on top of the wait: past it, the lease
	// has lapsed anyway.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.drainTimeout+m.lc.TTL)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			ref := h.l.Ref()
			err := h.l.Drain(dctx, func(fctx context.Context) error {
				t := time.NewTimer(m.c.drainTimeout)
				defer t.Stop()
				select {
				case <-h.indexed:
					return nil
				case <-t.C:
					return fmt.Errorf("agent: drain %s: indexing still running after %v: %w", ref.Item, m.c.drainTimeout, context.DeadlineExceeded)
				case <-fctx.Done():
					return fctx.Err()
				}
			})
			if err != nil {
				m.c.log.Warn("lease: drain", "node", m.node, "item", ref.Item, "err", err)
			}
			if m.forget(h) {
				m.c.idx.Drop(ref.Item)
			}
		})
	}
	wg.Wait()
}
