package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/schema"
)

// Ad is one advertisement handed to an [Applier], oldest first.
type Ad struct {
	// Cid is the advertisement's CID.
	Cid cid.Cid
	// Ad is the decoded, validated advertisement.
	Ad *schema.Advertisement
	// Provider is Ad.Provider, parsed.
	Provider peer.ID
	// Signer is the peer whose signature was verified (the provider or
	// the publisher); empty for an unsigned ad accepted by
	// [WithUnsignedAds].
	Signer peer.ID
	// Removed is true when a newer advertisement of the same walk removes
	// this advertisement's (provider, context): an indexer skips its
	// entries and metadata, as IPNI requires.
	Removed bool
	// Frozen is true when the node was frozen (see [WithFrozen]) as the
	// walker handed ad over: an indexer applies an ad with entries as a
	// metadata update only, fetching and storing none of its entries.
	Frozen bool
}

// Applier applies advertisements for a [Walker]: the [Ingester] puts them
// into a store; other consumers (a piece sampler) extract what they need.
type Applier interface {
	// Apply applies one advertisement, fetching whatever else it needs
	// (entry chunks, HAMT nodes) through src, which enforces the walker's timeouts and
	// rate limit. An error stalls the walk at ad; the next walk calls
	// Apply with it again. Apply may also be called again for an ad it
	// applied before a crash (see [WithCheckpoint]), so it must be
	// idempotent: applying ads i..k again over a state that already holds
	// them must end in the same state.
	Apply(ctx context.Context, src Syncer, ad Ad) error
	// Flush makes every effect of the ads applied so far durable. The
	// walker calls it before it persists that they are applied.
	Flush(ctx context.Context) error
}

// Walker walks one publisher's advertisement chain and keeps its position
// in a datastore; see the package documentation for the algorithm and the
// state it persists. Walks of one Walker run one at a time (a second Walk
// waits for the first); Walkers of different publishers share nothing but
// the datastore. State and Progress may be called at any time.
type Walker struct {
	ds        datastore.Batching
	publisher peer.ID
	keys      keys
	cfg       *walkerConfig
	log       *slog.Logger

	walkMu sync.Mutex // held by Walk and Reset
	// heads mirrors keyHeads once headsLoaded; guarded by walkMu.
	heads       []cid.Cid
	headsLoaded bool
	// cycle checks the walk in progress for a CID met twice, across
	// its runs in this process; guarded by walkMu.
	cycle cycleCheck

	stateMu sync.Mutex
	state   WalkState // mirror of the persisted state, valid when loaded
	loaded  bool

	walked  atomic.Uint64
	applied atomic.Uint64
}

// NewWalker returns the walker of publisher, keeping its state in ds under
// /walk/<publisher>/. The datastore's batches must be atomic (go-ds-leveldb's
// are) for the state to survive a crash. An [Ingester] makes the walkers
// of its publishers itself ([Ingester.Walker]), with its own settings.
func NewWalker(ds datastore.Batching, publisher peer.ID, opts ...WalkerOption) (*Walker, error) {
	cfg, err := newWalkerConfig(opts)
	if err != nil {
		return nil, err
	}
	return newWalker(ds, publisher, cfg)
}

func newWalker(ds datastore.Batching, publisher peer.ID, cfg *walkerConfig) (*Walker, error) {
	if ds == nil {
		return nil, fmt.Errorf("%w: nil datastore", ErrInvalidOption)
	}
	if err := publisher.Validate(); err != nil {
		return nil, fmt.Errorf("%w: publisher: %v", ErrInvalidOption, err)
	}
	return &Walker{
		ds:        ds,
		publisher: publisher,
		keys:      keysFor(publisher),
		cfg:       cfg,
		log:       cfg.logger.With("publisher", publisher.String()),
	}, nil
}

// Publisher returns the publisher whose chain w walks.
func (w *Walker) Publisher() peer.ID { return w.publisher }

// State returns the walker's position as last persisted.
func (w *Walker) State(ctx context.Context) (WalkState, error) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.loaded {
		return w.state, nil
	}
	s, err := loadState(ctx, w.ds, w.keys)
	if err != nil {
		return s, fmt.Errorf("ingest: load walker state of %s: %w", w.publisher, err)
	}
	w.state, w.loaded = s, true
	return s, nil
}

// Progress returns how many advertisements this Walker collected and
// applied since it was made.
func (w *Walker) Progress() (walked, applied uint64) {
	return w.walked.Load(), w.applied.Load()
}

// snapshot returns the state mirror without I/O, and false if it was not
// loaded yet.
func (w *Walker) snapshot() (WalkState, bool) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	return w.state, w.loaded
}

func (w *Walker) setState(s WalkState) {
	w.stateMu.Lock()
	w.state, w.loaded = s, true
	w.stateMu.Unlock()
}

// Reset abandons any walk in progress and sets the last head to lastHead
// (cid.Undef: walk the whole chain again), marking lastHead applied. A
// handoff uses it to resume ingestion right after the frozen indexer's last
// advertisement. The applied markers of earlier advertisements stay, so
// an advertisement applied before is not applied again, with two
// exceptions, so that a walk applies them again, with their entries, once
// the node is no longer frozen (an unfreeze resets the walker to the
// frozen point): advertisements applied while frozen ([WithFrozen]) have
// no marker, and the heads of the last walks are forgotten (a walk stops
// at them without a marker of their own). Applying again what was applied
// unfrozen since lastHead ends in the same store.
func (w *Walker) Reset(ctx context.Context, lastHead cid.Cid) error {
	w.walkMu.Lock()
	defer w.walkMu.Unlock()
	b, err := w.ds.Batch(ctx)
	if err != nil {
		return fmt.Errorf("ingest: reset walker of %s: %w", w.publisher, err)
	}
	if err := w.discard(ctx, b); err != nil {
		return fmt.Errorf("ingest: reset walker of %s: %w", w.publisher, err)
	}
	if err := w.forgetFrozen(ctx, b, lastHead); err != nil {
		return fmt.Errorf("ingest: reset walker of %s: %w", w.publisher, err)
	}
	if err := b.Delete(ctx, w.keys.key(keyHeads)); err != nil {
		return fmt.Errorf("ingest: reset walker of %s: %w", w.publisher, err)
	}
	if lastHead.Defined() {
		err = errors.Join(b.Put(ctx, w.keys.key(keyLastHead), lastHead.Bytes()),
			b.Put(ctx, w.keys.done(lastHead), nil))
	} else {
		err = b.Delete(ctx, w.keys.key(keyLastHead))
	}
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("ingest: reset walker of %s: %w", w.publisher, err)
	}
	w.heads, w.headsLoaded = nil, true
	w.setState(WalkState{LastHead: lastHead})
	return nil
}

// recentHeads returns the heads of the last walks that finished, newest
// first (keyHeads). The caller holds walkMu.
func (w *Walker) recentHeads(ctx context.Context) ([]cid.Cid, error) {
	if w.headsLoaded {
		return w.heads, nil
	}
	b, err := w.ds.Get(ctx, w.keys.key(keyHeads))
	if err != nil && !errors.Is(err, datastore.ErrNotFound) {
		return nil, err
	}
	heads, err := decodeHeads(b)
	if err != nil {
		return nil, err
	}
	w.heads, w.headsLoaded = heads, true
	return heads, nil
}

// isApplied reports whether the advertisement c is known to be applied,
// so that a walk stops there: it is the last head, the head of one of the
// last walks, or marked applied (done/<cid>). The caller holds walkMu.
func (w *Walker) isApplied(ctx context.Context, s WalkState, c cid.Cid) (bool, error) {
	if c.Equals(s.LastHead) {
		return true, nil
	}
	heads, err := w.recentHeads(ctx)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(heads, c.Equals) {
		return true, nil
	}
	return w.ds.Has(ctx, w.keys.done(c))
}

// forgetFrozen adds to b the deletes of the markers of the advertisements
// applied while frozen by versions that wrote them (frozen/<cid>), but
// that of keep.
func (w *Walker) forgetFrozen(ctx context.Context, b datastore.Write, keep cid.Cid) error {
	prefix := w.keys.dir(dirFrozen)
	res, err := w.ds.Query(ctx, query.Query{Prefix: prefix, KeysOnly: true})
	if err != nil {
		return err
	}
	entries, err := res.Rest()
	if err != nil {
		return err
	}
	for _, e := range entries {
		k := datastore.RawKey(e.Key)
		if err := b.Delete(ctx, k); err != nil {
			return err
		}
		c, err := cid.Decode(strings.TrimPrefix(e.Key, prefix))
		if err != nil || c.Equals(keep) {
			continue
		}
		if err := b.Delete(ctx, w.keys.done(c)); err != nil {
			return err
		}
	}
	return nil
}

// discard adds to b the deletes that drop the walk in progress.
func (w *Walker) discard(ctx context.Context, b datastore.Write) error {
	for _, k := range []string{keyHead, keyTail, keyCount, keySpilled, keyApplied} {
		if err := b.Delete(ctx, w.keys.key(k)); err != nil {
			return err
		}
	}
	if err := b.Delete(ctx, walkingKey(w.publisher)); err != nil {
		return err
	}
	for _, d := range []string{dirQueue, dirSeen, dirRemoved} {
		if err := deletePrefix(ctx, w.ds, b, w.keys.dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// Walk brings the publisher's chain up to head: it first finishes any walk
// in progress (resuming where a previous process stopped), then, unless
// head is already applied, walks from head back to the last head (or the
// start of the chain) and applies the advertisements collected, oldest
// first, through a. With head cid.Undef it asks src for the head. A head
// announced while Walk runs is for the next Walk. Walk trusts head: it is
// the [Ingester] that verifies a publisher's signed head before it walks
// (see "Announces are hints" in the package documentation).
//
// Walk persists its position as it collects (in batches of a few hundred
// writes or a quarter of a second, so that a walk of small advertisements
// is not bound by the disk's fsync rate) and at every checkpoint while
// applying, so that it can be stopped at any point,
// by ctx or by killing the process, and resumed by the next Walk. It
// returns nil once every advertisement up to head is applied; an
// [*AdError] wrapping [ErrSignature], [ErrInvalidBlock] or [ErrCycle] when
// an advertisement collected does not verify (the walk is then abandoned,
// nothing of it kept, the last head as it was); an error wrapping
// [ErrDepthLimit] or [ErrSpillLimit] when the chain down to the last head
// is over a limit (abandoned too); an [*AdError] when an advertisement
// cannot be fetched, or its entries fetched, verified or applied (the walk
// stalls there, and the next Walk retries it); or ctx.Err().
func (w *Walker) Walk(ctx context.Context, src Syncer, head cid.Cid, a Applier) error {
	if _, ok := src.(*limitedSyncer); !ok {
		src = newLimitedSyncer(src, w.cfg)
	}
	return w.walk(ctx, src, head, a, nil)
}

// walk is Walk over a src the caller has limited, within the slot sl (nil:
// no slot, the walk runs to its end). When sl runs out the walk stops where
// it is, persisted, and returns errYield (or ErrTooSlow).
func (w *Walker) walk(ctx context.Context, src Syncer, head cid.Cid, a Applier, sl *slot) error {
	if w.cfg.unordered {
		return w.walkUnordered(ctx, src, head, a, sl)
	}
	w.walkMu.Lock()
	defer w.walkMu.Unlock()
	s, err := w.State(ctx)
	if err != nil {
		return err
	}
	if s.Walking() {
		if err := w.run(ctx, src, s, a, sl); err != nil {
			return err
		}
		if s, err = w.State(ctx); err != nil {
			return err
		}
	}
	if !head.Defined() {
		if head, err = src.Head(ctx); err != nil {
			return err
		}
		if !head.Defined() {
			return nil // nothing published
		}
	}
	if done, err := w.isApplied(ctx, s, head); err != nil {
		return fmt.Errorf("ingest: walk %s: %w", w.publisher, err)
	} else if done {
		return nil
	}
	b, err := w.ds.Batch(ctx)
	if err == nil {
		err = errors.Join(b.Put(ctx, w.keys.key(keyHead), head.Bytes()), b.Put(ctx, w.keys.key(keyTail), head.Bytes()),
			b.Put(ctx, walkingKey(w.publisher), nil))
	}
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("ingest: start walk of %s: %w", w.publisher, err)
	}
	s = WalkState{LastHead: s.LastHead, Head: head, Tail: head}
	w.setState(s)
	w.cycle = cycleCheck{}
	w.log.Info("walk started", "cid", head.String(), "lastHead", s.LastHead.String())
	return w.run(ctx, src, s, a, sl)
}

// run continues the walk in progress described by s.
func (w *Walker) run(ctx context.Context, src Syncer, s WalkState, a Applier, sl *slot) error {
	start := time.Now()
	cb := &collectBatch{ds: w.ds, rmDir: w.keys.dir(dirRemoved)}
	for s.Tail.Defined() {
		var err error
		if s, err = w.collect(ctx, src, s, cb); err != nil {
			if abandoned(err) {
				// Nothing unverified is kept: drop the walk, as collect
				// does for the limits it checks itself.
				if !errors.Is(err, ErrDepthLimit) && !errors.Is(err, ErrSpillLimit) {
					if derr := w.abandon(context.WithoutCancel(ctx), s); derr != nil {
						err = errors.Join(err, derr)
					}
				}
				return err
			}
			// Keep the advertisements collected before the failure.
			if ferr := cb.commit(context.WithoutCancel(ctx)); ferr != nil {
				err = errors.Join(err, fmt.Errorf("ingest: walk %s: %w", w.publisher, ferr))
			}
			return err
		}
		if err := sl.use(); err != nil {
			if cerr := cb.commit(context.WithoutCancel(ctx)); cerr != nil {
				err = errors.Join(err, fmt.Errorf("ingest: walk %s: %w", w.publisher, cerr))
			}
			return err
		}
		if cb.full() {
			if err := cb.commit(ctx); err != nil {
				return fmt.Errorf("ingest: walk %s: %w", w.publisher, err)
			}
		}
	}
	if err := cb.commit(ctx); err != nil {
		return fmt.Errorf("ingest: walk %s: %w", w.publisher, err)
	}
	if err := w.apply(ctx, src, s, a, sl); err != nil {
		return err
	}
	w.log.Info("walk finished", "cid", s.Head.String(), "ads", s.Collected, "elapsed", time.Since(start))
	if h := w.cfg.hooks.WalkDone; h != nil {
		h(w.publisher, s.Head, s.Collected, time.Since(start))
	}
	return nil
}
