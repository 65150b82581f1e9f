package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/schema"
)

// apply applies the collected advertisements, oldest first, checkpointing
// as it goes.
func (w *Walker) apply(ctx context.Context, src Syncer, s WalkState, a Applier, sl *slot) error {
	var done []appliedAd // applied since the last checkpoint
	last := time.Now()
	checkpoint := func(ctx context.Context) error {
		if len(done) == 0 && s.Applied < s.Collected {
			return nil
		}
		if err := a.Flush(ctx); err != nil {
			return fmt.Errorf("ingest: walk %s: flush: %w", w.publisher, err)
		}
		b, err := w.ds.Batch(ctx)
		if err != nil {
			return fmt.Errorf("ingest: walk %s: checkpoint: %w", w.publisher, err)
		}
		first := s.Applied - len(done)
		for i, d := range done {
			// seen/<cid> markers of walks collected by earlier
			// versions go when the walk ends (discard).
			err = errors.Join(err, b.Delete(ctx, w.keys.queue(s.Collected-1-(first+i))))
			// A frozen node walks for as long as its publishers
			// publish, storing nothing new: a marker for each of those
			// advertisements would be the one thing that grows its
			// disk. The walk stops at the last head or a recent one.
			if !d.frozen {
				err = errors.Join(err, b.Put(ctx, w.keys.done(d.cid), nil))
			}
		}
		next, heads := s, w.heads
		if s.Applied == s.Collected {
			next = WalkState{LastHead: s.Head}
			var herr error
			if heads, herr = w.recentHeads(ctx); herr == nil {
				heads = append([]cid.Cid{s.Head}, slices.DeleteFunc(slices.Clone(heads), s.Head.Equals)...)
				heads = heads[:min(len(heads), maxRecentHeads)]
			}
			err = errors.Join(err, herr, b.Put(ctx, w.keys.key(keyLastHead), s.Head.Bytes()),
				b.Put(ctx, w.keys.key(keyHeads), encodeHeads(heads)), w.discard(ctx, b))
		} else {
			err = errors.Join(err, b.Put(ctx, w.keys.key(keyApplied), intBytes(s.Applied)))
		}
		if err == nil {
			err = b.Commit(ctx)
		}
		if err != nil {
			return fmt.Errorf("ingest: walk %s: checkpoint: %w", w.publisher, err)
		}
		w.setState(next)
		w.heads = heads
		done, last = done[:0], time.Now()
		return nil
	}

	for s.Applied < s.Collected {
		if err := w.applyOne(ctx, src, s, a, &done); err != nil {
			// Keep what was applied before the failure; a cancelled ctx
			// must not stop this short, local write.
			if cerr := checkpoint(context.WithoutCancel(ctx)); cerr != nil {
				return errors.Join(err, cerr)
			}
			return err
		}
		s.Applied++
		if err := sl.use(); err != nil && s.Applied < s.Collected {
			if cerr := checkpoint(context.WithoutCancel(ctx)); cerr != nil {
				return errors.Join(err, cerr)
			}
			return err
		}
		if len(done) >= w.cfg.checkpointEvery || time.Since(last) >= w.cfg.checkpointInterval {
			if err := checkpoint(ctx); err != nil {
				return err
			}
		}
	}
	return checkpoint(ctx)
}

// appliedAd is an advertisement applied since the last checkpoint.
type appliedAd struct {
	cid    cid.Cid
	frozen bool // applied while frozen: no done/ marker
}

// applyOne applies the advertisement numbered s.Applied from the oldest,
// and appends it to done.
func (w *Walker) applyOne(ctx context.Context, src Syncer, s WalkState, a Applier, done *[]appliedAd) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := w.keys.queue(s.Collected - 1 - s.Applied)
	raw, err := w.ds.Get(ctx, k)
	if err != nil {
		return fmt.Errorf("ingest: walk %s: read %s: %w", w.publisher, k, err)
	}
	p, err := decodePending(raw)
	if err != nil {
		return fmt.Errorf("ingest: walk %s: %s: %w", w.publisher, k, err)
	}
	ad := p.ad
	if ad == nil { // collected by an older version, which kept the block
		if ad, err = schema.DecodeAdvertisement(p.cid, p.block); err != nil {
			return &AdError{Ad: p.cid, Err: fmt.Errorf("%w: %w", ErrInvalidBlock, err)}
		}
	}
	provider, _ := peer.Decode(ad.Provider)
	signer := p.signer
	if p.flags&flagVerified == 0 { // collected by an older version, which verified later
		if signer, err = w.verify(ad, provider); err != nil {
			return &AdError{Ad: p.cid, Provider: provider, Err: err}
		}
	}
	start := time.Now()
	isFrozen := w.cfg.frozen != nil && w.cfg.frozen()
	if err := a.Apply(ctx, src, Ad{Cid: p.cid, Ad: ad, Provider: provider, Signer: signer, Removed: p.flags&flagRemoved != 0, Frozen: isFrozen}); err != nil {
		var ae *AdError
		if errors.As(err, &ae) {
			return err
		}
		return &AdError{Ad: p.cid, Provider: provider, Err: err}
	}
	*done = append(*done, appliedAd{p.cid, isFrozen})
	w.applied.Add(1)
	if h := w.cfg.hooks.AdApplied; h != nil {
		h(w.publisher, provider, p.cid, time.Since(start))
	}
	return nil
}
