package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/schema"
)

// Positions is an optional capability of an [Applier] of an unordered walk
// ([WithUnordered]): the applier keeps the publisher's walk position
// itself, in place of the walker's datastore, so that it can persist the
// position together with the effects of each advertisement (one
// transaction) and share it between processes. A walker finds it by type
// assertion on the Applier.
//
// The position is a [WalkState] of which an unordered walk uses LastHead,
// Head, Tail and Collected (advertisements applied by the walk in
// progress; Applied equals it and Spilled is 0).
type Positions interface {
	// Position returns the publisher's persisted position. It fails with
	// an error wrapping [ErrWalkedElsewhere] when another process walks
	// the publisher now; the walk then ends without a failure.
	Position(ctx context.Context) (WalkState, error)
	// Move persists to as the position if the persisted one is still
	// from, atomically with whatever the applier kept of the
	// advertisement it applied last (the walker calls Move once after each
	// Apply, and also without an Apply to start a walk). If the position
	// is no longer from, Move changes nothing and fails with an error
	// wrapping [ErrPositionMoved]; the walker then reads the position
	// again and goes on from there. Move may also fail with
	// [ErrWalkedElsewhere].
	Move(ctx context.Context, from, to WalkState) error
}

// walkUnordered is the walk of [WithUnordered]: every advertisement is
// applied as it is fetched, newest first, and the position moved after
// each one. See the package documentation (Unordered walks).
func (w *Walker) walkUnordered(ctx context.Context, src Syncer, head cid.Cid, a Applier, sl *slot) error {
	w.walkMu.Lock()
	defer w.walkMu.Unlock()
	pos, ok := a.(Positions)
	if !ok {
		pos = dsPositions{w}
	} else {
		pos = markedPositions{Positions: pos, w: w}
	}
	s, err := pos.Position(ctx)
	if err != nil {
		return err
	}
	w.setState(s)
	if s.Collected > s.Applied {
		// An ordered walk that an earlier version left half done: its
		// collected advertisements are only in the datastore's queue.
		// Finish it in order first.
		if err := w.run(ctx, src, s, a, sl); err != nil {
			return err
		}
		if s, err = pos.Position(ctx); err != nil {
			return err
		}
		w.setState(s)
	}
	if !s.Walking() && head.Defined() && head.Equals(s.LastHead) {
		return nil // up to date, without a request
	}
	start := time.Now()
	for {
		if !s.Walking() {
			// The head a walk starts from is fetched after the position
			// it starts from was read, and the start is a move conditioned
			// on that position: so it is never older than the last head,
			// which another process may have moved since head was given.
			h, err := src.Head(ctx)
			if err != nil {
				return err
			}
			if !h.Defined() || h.Equals(s.LastHead) {
				return nil
			}
			next := WalkState{LastHead: s.LastHead, Head: h, Tail: h}
			if err := pos.Move(ctx, s, next); err != nil {
				if s, err = w.raced(ctx, pos, err, sl); err != nil {
					return err
				}
				continue
			}
			s, start = next, time.Now()
			w.setState(s)
			w.log.Info("walk started", "cid", h.String(), "lastHead", s.LastHead.String())
		}
		next, err := w.step(ctx, src, pos, s, a)
		if err != nil {
			if s, err = w.raced(ctx, pos, err, sl); err != nil {
				return err
			}
			continue
		}
		if !next.Walking() {
			w.log.Info("walk finished", "cid", s.Head.String(), "ads", s.Collected+1, "elapsed", time.Since(start))
			if h := w.cfg.hooks.WalkDone; h != nil {
				h(w.publisher, s.Head, s.Collected+1, time.Since(start))
			}
		}
		s = next
		if !s.Walking() && head.Defined() && head.Equals(s.LastHead) {
			return nil
		}
		if err := sl.use(); err != nil {
			return err
		}
	}
}

// raced handles err from a move: if it is a lost race (ErrPositionMoved),
// it reads the position again and returns it, and the race counts against
// the slot as a step would (each lost race is another walk's step, so
// racing walks progress; the slot bounds how long this one keeps at it);
// any other error is returned.
func (w *Walker) raced(ctx context.Context, pos Positions, err error, sl *slot) (WalkState, error) {
	if !errors.Is(err, ErrPositionMoved) {
		return WalkState{}, err
	}
	s, perr := pos.Position(ctx)
	if perr != nil {
		return s, perr
	}
	w.setState(s)
	if err := sl.use(); err != nil {
		return s, err
	}
	return s, nil
}

// step fetches, verifies and applies the advertisement at s.Tail and moves
// the position past it: to its PreviousID, or, when that is the last head
// or the start of the chain, to the end of the walk (LastHead = Head).
//
// An advertisement that cannot be fetched, or whose entries cannot be
// applied, stalls the walk there (the position does not move; the next
// walk tries it again). One that does not decode or verify, or a walk over
// the depth limit, ends the walk at it, reported as an [*AdError]: what
// lies beyond it cannot be reached through it, and the newer
// advertisements are applied already, so starting again from the head
// would only apply them twice; a newer head is walked down to this walk's
// head.
func (w *Walker) step(ctx context.Context, src Syncer, pos Positions, s WalkState, a Applier) (WalkState, error) {
	c := s.Tail
	end := WalkState{LastHead: s.Head}
	fail := func(err error) (WalkState, error) {
		if merr := pos.Move(ctx, s, end); merr != nil {
			return s, errors.Join(err, merr)
		}
		w.setState(end)
		w.log.Warn("walk ended at an advertisement that cannot be walked past", "cid", c.String(), "err", err)
		return end, err
	}
	if s.Collected >= w.cfg.adDepth {
		return fail(&AdError{Ad: c, Err: fmt.Errorf("%w: walk %s from %s: more than %d advertisements", ErrDepthLimit, w.publisher, s.Head, w.cfg.adDepth)})
	}
	block, err := src.Block(ctx, c)
	if err != nil {
		return s, &AdError{Ad: c, Err: err}
	}
	ad, err := schema.DecodeAdvertisement(c, block)
	if err != nil {
		return fail(&AdError{Ad: c, Err: fmt.Errorf("%w: %w", ErrInvalidBlock, err)})
	}
	provider, _ := peer.Decode(ad.Provider) // validated by DecodeAdvertisement
	signer, err := w.verify(ad, provider)
	if err != nil {
		return fail(&AdError{Ad: c, Provider: provider, Err: err})
	}
	w.walked.Add(1)
	if h := w.cfg.hooks.AdWalked; h != nil {
		h(w.publisher, c)
	}
	applyStart := time.Now()
	isFrozen := w.cfg.frozen != nil && w.cfg.frozen()
	if err := a.Apply(ctx, src, Ad{Cid: c, Ad: ad, Provider: provider, Signer: signer, Frozen: isFrozen}); err != nil {
		var ae *AdError
		if errors.As(err, &ae) {
			return s, err
		}
		return s, &AdError{Ad: c, Provider: provider, Err: err}
	}
	next := s
	next.Collected++
	next.Applied = next.Collected
	next.Tail = ad.PreviousID
	if !next.Tail.Defined() || next.Tail.Equals(s.LastHead) {
		next = end
	}
	if err := pos.Move(ctx, s, next); err != nil {
		return s, err
	}
	w.setState(next)
	w.applied.Add(1)
	if h := w.cfg.hooks.AdApplied; h != nil {
		h(w.publisher, provider, c, time.Since(applyStart))
	}
	if n := w.walked.Load(); n%10_000 == 0 {
		w.log.Info("walking", "cid", c.String(), "applied", next.Collected, "head", s.Head.String())
	}
	return next, nil
}

// dsPositions keeps an unordered walk's position in the walker's
// datastore, under the keys of an ordered walk (lastHead, head, tail,
// count and applied, equal) and /walking/<publisher> while it is
// unfinished. Only the walker's own process moves it (walkMu is held), so
// Move does not compare; the Applier's effects are not in the same
// transaction, so a process killed between an Apply and its Move applies
// that advertisement again when it resumes.
type dsPositions struct{ w *Walker }

func (p dsPositions) Position(ctx context.Context) (WalkState, error) {
	s, err := loadState(ctx, p.w.ds, p.w.keys)
	if err != nil {
		return s, fmt.Errorf("ingest: load walker state of %s: %w", p.w.publisher, err)
	}
	return s, nil
}

func (p dsPositions) Move(ctx context.Context, _, to WalkState) error {
	w := p.w
	b, err := w.ds.Batch(ctx)
	if err != nil {
		return fmt.Errorf("ingest: walk %s: move: %w", w.publisher, err)
	}
	put := func(k string, v []byte) error { return b.Put(ctx, w.keys.key(k), v) }
	if to.Walking() {
		err = errors.Join(put(keyHead, to.Head.Bytes()), put(keyCount, intBytes(to.Collected)),
			put(keyApplied, intBytes(to.Collected)), b.Put(ctx, walkingKey(w.publisher), nil))
		if to.Tail.Defined() {
			err = errors.Join(err, put(keyTail, to.Tail.Bytes()))
		} else {
			err = errors.Join(err, b.Delete(ctx, w.keys.key(keyTail)))
		}
	} else {
		err = w.discard(ctx, b)
	}
	if err == nil {
		if to.LastHead.Defined() {
			err = errors.Join(put(keyLastHead, to.LastHead.Bytes()), b.Put(ctx, w.keys.done(to.LastHead), nil))
		} else {
			err = b.Delete(ctx, w.keys.key(keyLastHead))
		}
	}
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("ingest: walk %s: move: %w", w.publisher, err)
	}
	return nil
}

// markedPositions wraps the Positions of an applier so that the walker's
// datastore still lists the walk as unfinished (/walking/<publisher>)
// while the applier's position says it is: a restarted Ingester resumes
// it (Run queues it with its stored addresses) without waiting for an
// announce.
type markedPositions struct {
	Positions
	w *Walker
}

func (m markedPositions) Position(ctx context.Context) (WalkState, error) {
	s, err := m.Positions.Position(ctx)
	if err != nil {
		return s, err
	}
	return s, m.mark(ctx, s)
}

func (m markedPositions) Move(ctx context.Context, from, to WalkState) error {
	if err := m.Positions.Move(ctx, from, to); err != nil {
		return err
	}
	if from.Walking() == to.Walking() {
		return nil
	}
	return m.mark(ctx, to)
}

func (m markedPositions) mark(ctx context.Context, s WalkState) error {
	k := walkingKey(m.w.publisher)
	var err error
	if s.Walking() {
		err = m.w.ds.Put(ctx, k, nil)
	} else {
		err = m.w.ds.Delete(ctx, k)
	}
	if err != nil {
		return fmt.Errorf("ingest: walk %s: mark: %w", m.w.publisher, err)
	}
	return nil
}
