package assigner

// Announces in, decisions out: admin requests to indexers and announces forwarded to them.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/admin"
	"github.com/indexkit/indexkit/ingest/announce"
)

// onAnnounce takes an announce in: that of a publisher the state knows
// goes on at once; another waits for its publisher's head to verify.
// reserved: the announce holds a place in the verification queue, which
// is kept if it waits there and given back otherwise.
func (s *Service) onAnnounce(ctx context.Context, a announce.Announce, reserved bool) {
	kept := false
	if s.state.Known(a.Publisher) {
		s.acceptAnnounce(ctx, a)
	} else {
		kept = s.verifyAnnounce(ctx, a, reserved)
	}
	if reserved && !kept {
		s.verify.release()
	}
}

// acceptAnnounce records a as its publisher's latest, forwards it to the
// publisher's holders and feeds it to the state. While an assign or
// handoff request for the publisher is in flight it is only noted as the
// newest, and goes on when the last one ends (coalesced).
func (s *Service) acceptAnnounce(ctx context.Context, a announce.Announce) {
	p := a.Publisher
	m := announce.Message{Cid: a.Cid, Addrs: a.Addrs, ExtraData: a.ExtraData}
	if len(m.Addrs) == 0 {
		m.Addrs = s.latest[p].Addrs // a gossip announce may carry none
	}
	s.latest[p] = m
	if s.requests[p] > 0 {
		a.Addrs = m.Addrs
		s.again[p] = a
		s.deferred.Add(1)
		return
	}
	if s.opts.resend && a.Source == announce.SourceHTTP && len(m.Addrs) > 0 {
		for _, id := range s.state.Holders(a.Publisher) {
			s.goForward(ctx, s.ixs[id], a.Publisher, m)
		}
	}
	ds := s.state.Announce(p)
	s.apply(ctx, ds)
	for _, d := range ds {
		if d.Kind == KindRetryLater && d.Publisher == p {
			s.pollMayHold(ctx, p) // p waits: poll what may hold it now
			break
		}
	}
	s.reclass(p)
}

// apply carries decisions out, each request in its own goroutine.
func (s *Service) apply(ctx context.Context, ds []Decision) {
	for _, d := range ds {
		if h := s.opts.hooks.Decision; h != nil {
			h(d)
		}
		switch d.Kind {
		case KindAssign, KindHandoff:
			s.opts.log.Info("decision", "kind", string(d.Kind), "publisher", d.Publisher, "indexer", d.Indexer, "from", d.From)
			s.dispatch(ctx, d)
		default:
			s.opts.log.Info("decision", "kind", string(d.Kind), "publisher", d.Publisher, "reason", string(d.Reason))
		}
	}
}

func (s *Service) dispatch(ctx context.Context, d Decision) {
	ix := s.ixs[d.Indexer]
	var frozenURL string
	if d.Kind == KindHandoff {
		if f := s.ixs[d.From]; f != nil {
			frozenURL = f.FindURL
		}
	}
	if ix == nil { // not in the pool: cannot happen, report it failed
		s.apply(ctx, s.result(d, Failed))
		return
	}
	ix.gen++
	ix.inflight++
	s.requests[d.Publisher]++
	s.classes.set(d.Publisher, announce.ClassPending)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		var err error
		if d.Kind == KindAssign {
			err = ix.client.Assign(rctx, d.Publisher)
		} else {
			err = ix.client.Handoff(rctx, d.Publisher, admin.HandoffRequest{FrozenID: d.FrozenID, FrozenURL: frozenURL})
		}
		cancel()
		o := outcomeOf(err, d.Kind == KindHandoff)
		if ctx.Err() != nil {
			return // shutting down: the result would be dropped anyway
		}
		if h := s.opts.hooks.Request; h != nil {
			h(RequestResult{Kind: d.Kind, Indexer: d.Indexer, Publisher: d.Publisher, From: d.From, Outcome: o, Err: err, Duration: time.Since(start)})
		}
		lvl := slog.LevelInfo
		if err != nil {
			lvl = slog.LevelWarn
		}
		s.opts.log.Log(ctx, lvl, "request done", "kind", string(d.Kind), "publisher", d.Publisher, "indexer", d.Indexer,
			"outcome", o.String(), "err", err)
		s.send(ctx, func(ctx context.Context) { s.onResult(ctx, ix, d, o) })
	}()
}

// onResult reports the outcome o of the request d to ix to the state. Once
// no request for the publisher is in flight, the newest announce taken
// meanwhile goes on; the indexer that now holds the publisher gets its
// latest announce, so that it syncs at once.
func (s *Service) onResult(ctx context.Context, ix *svcIndexer, d Decision, o Outcome) {
	p := d.Publisher
	ix.inflight--
	if s.requests[p]--; s.requests[p] <= 0 {
		delete(s.requests, p)
	}
	s.apply(ctx, s.result(d, o))
	if ix.inflight == 0 && ix.repoll && !ix.polling {
		s.startPoll(ctx, ix)
	}
	forwarded := false
	if a, ok := s.again[p]; ok && s.requests[p] == 0 {
		delete(s.again, p)
		// acceptAnnounce forwards it to every holder, ix among them.
		forwarded = s.opts.resend && a.Source == announce.SourceHTTP && len(s.latest[p].Addrs) > 0
		s.acceptAnnounce(ctx, a)
	} else {
		s.reclass(p)
	}
	if m, ok := s.latest[p]; o == Done && !forwarded && ok && len(m.Addrs) > 0 {
		s.goForward(ctx, ix, p, m)
	}
}

// result reports the outcome of d to the state.
func (s *Service) result(d Decision, o Outcome) []Decision {
	if d.Kind == KindHandoff {
		return s.state.HandoffResult(d.From, d.Indexer, d.Publisher, o)
	}
	return s.state.AssignResult(d.Indexer, d.Publisher, o)
}

// outcomeOf maps an admin call's error to the state's outcome.
func outcomeOf(err error, handoff bool) Outcome {
	switch {
	case err == nil:
		return Done
	case errors.Is(err, admin.ErrAlreadyAssigned):
		return AlreadyHeld
	case errors.Is(err, admin.ErrFrozen), errors.Is(err, admin.ErrNotAllowed), errors.Is(err, admin.ErrNoAssigner),
		errors.Is(err, admin.ErrUnknownIndexer): // does not take handoffs from that frozen indexer
		return Refused
	case handoff && errors.Is(err, admin.ErrUnknownPublisher):
		return NoSource
	}
	return Failed
}

func (s *Service) goForward(ctx context.Context, ix *svcIndexer, p peer.ID, m announce.Message) {
	if ix == nil || ix.IngestURL == "" {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.forward(ctx, ix, p, m)
	}()
}

// forward PUTs the announce m of p to ix's ingest API (CBOR).
func (s *Service) forward(ctx context.Context, ix *svcIndexer, p peer.ID, m announce.Message) {
	if ix.IngestURL == "" {
		return
	}
	snd, err := announce.NewHTTPSender([]string{ix.IngestURL}, p, announce.WithHTTPClient(s.opts.hc))
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		err = snd.Send(rctx, m)
		cancel()
	}
	if err != nil {
		s.opts.log.Warn("forward announce", "publisher", p, "indexer", ix.ID, "cid", m.Cid, "err", err)
	} else {
		s.opts.log.Debug("forwarded announce", "publisher", p, "indexer", ix.ID, "cid", m.Cid)
	}
	if h := s.opts.hooks.Forward; h != nil {
		h(ix.ID, p, err)
	}
}
