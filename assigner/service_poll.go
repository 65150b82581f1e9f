package assigner

// Polling indexers for their assignments and status.

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/admin"
)

func (s *Service) pollAll(ctx context.Context) {
	for _, ix := range s.order {
		s.startPoll(ctx, ix)
	}
}

// startPoll polls ix unless a poll is under way; while requests to ix are
// in flight it only marks ix to be polled once they have ended.
func (s *Service) startPoll(ctx context.Context, ix *svcIndexer) {
	if ix.polling {
		return
	}
	if ix.inflight > 0 {
		ix.repoll = true
		return
	}
	ix.polling, ix.repoll = true, false
	ix.polled = time.Now()
	gen := ix.gen
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		st, err := s.fetch(ctx, ix)
		if ctx.Err() != nil {
			return
		}
		d := time.Since(start)
		s.send(ctx, func(ctx context.Context) { s.onPolled(ctx, ix, gen, st, err, d) })
	}()
}

// pollMayHold asks for a poll of the indexers that may hold p without the
// state knowing (never polled, or a request for p failed since their
// last poll), for an announce of p that must wait: polling them is what
// lets p go on, and the periodic poll may be minutes away.
func (s *Service) pollMayHold(ctx context.Context, p peer.ID) {
	ids := s.state.MayHold(p)
	for _, id := range ids {
		if ix := s.ixs[id]; ix != nil {
			ix.wanted = true
		}
	}
	if len(ids) > 0 {
		s.opts.log.Debug("poll on announce", "publisher", p, "indexers", ids)
		s.startWanted(ctx)
	}
}

// startWanted starts the polls announces asked for, each once no poll of
// its indexer has started for the announce poll interval; the others are
// started when the wantPoll timer fires. One under way is waited for:
// it may have started before the indexer came up.
func (s *Service) startWanted(ctx context.Context) {
	now := time.Now()
	var next time.Duration
	for _, ix := range s.order {
		if !ix.wanted || ix.polling {
			continue
		}
		if wait := ix.polled.Add(s.opts.announcePoll).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		ix.wanted = false
		s.startPoll(ctx, ix) // or, while requests are in flight, once they end
	}
	if next > 0 {
		s.wantPoll.Reset(next)
	}
}

// fetch reads the indexer's lists and status, each request bounded.
func (s *Service) fetch(ctx context.Context, ix *svcIndexer) (IndexerStatus, error) {
	var st IndexerStatus
	call := func(f func(context.Context) error) error {
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		defer cancel()
		return f(rctx)
	}
	var as []admin.Assignment
	if err := call(func(c context.Context) (err error) { as, err = ix.client.Assigned(c); return }); err != nil {
		return st, err
	}
	var status admin.Status
	if err := call(func(c context.Context) (err error) { status, err = ix.client.Status(c); return }); err != nil {
		return st, err
	}
	st.ID, st.Frozen = status.ID, status.Frozen
	for _, a := range as {
		st.Assigned = append(st.Assigned, Assignment{Publisher: a.Publisher, Continued: a.Continued})
	}
	if !st.Frozen {
		if err := call(func(c context.Context) (err error) { st.Preferred, err = ix.client.Preferred(c); return }); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *Service) onPolled(ctx context.Context, ix *svcIndexer, gen uint64, st IndexerStatus, err error, d time.Duration) {
	ix.polling = false
	res := PollResult{Indexer: ix.ID, Err: err, Frozen: st.Frozen, Assigned: len(st.Assigned), Duration: d}
	var ds []Decision
	var changed []peer.ID // publishers whose announce class may have changed
	switch {
	case err != nil:
		s.opts.log.Warn("indexer offline", "indexer", ix.ID, "err", err)
		ds, _ = s.state.Offline(ix.ID)
	case ix.gen != gen || ix.inflight > 0:
		// A request overlapped the poll: its lists may predate the
		// request's effect (the ordering contract of State.Polled).
		res.Discarded = true
		ix.repoll = true
		ds, _ = s.state.Online(ix.ID)
	default:
		ds, err = s.state.Polled(ix.ID, st)
		if err != nil {
			res.Err = err
			s.opts.log.Warn("indexer status", "indexer", ix.ID, "err", err)
			ds, _ = s.state.Offline(ix.ID)
		} else {
			ix.wanted = false // its assignments are known now
			s.opts.log.Debug("polled", "indexer", ix.ID, "frozen", st.Frozen, "assigned", len(st.Assigned))
			// The publishers it held and holds may have become known or
			// unknown to the state: their announce class follows.
			held := make([]peer.ID, 0, len(st.Assigned))
			for _, a := range st.Assigned {
				held = append(held, a.Publisher)
			}
			changed = append(ix.held, held...)
			ix.held = held
		}
	}
	if h := s.opts.hooks.Poll; h != nil {
		h(res)
	}
	s.apply(ctx, ds)
	for _, p := range changed {
		s.reclass(p)
	}
	if ix.repoll && ix.inflight == 0 {
		s.startPoll(ctx, ix)
	}
	if ix.wanted {
		s.startWanted(ctx)
	}
}
