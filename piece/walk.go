package piece

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"

	"github.com/indexkit/indexkit/ingest"
	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// walkApplier is the [ingest.Applier] of the Tracker: it turns each
// advertisement of one publisher's chain into (piece, payloads) offers and
// counters of the ad's provider. Every write goes to the Store before Apply
// returns, so Flush has nothing to do. The walk position is the
// ingester's (its datastore), moved after Apply: a process killed in
// between counts that advertisement again when it resumes. With a Store
// that keeps walks, the Tracker uses [sharedApplier] instead.
type walkApplier struct {
	t   *Tracker
	pub peer.ID
}

func (a walkApplier) Flush(context.Context) error { return nil }

// Apply implements [ingest.Applier]: it samples ad (see sample) and adds
// its counters to the provider's status.
func (a walkApplier) Apply(ctx context.Context, src ingest.Syncer, ad ingest.Ad) error {
	u, err := a.sample(ctx, src, ad)
	if err != nil {
		return err
	}
	return a.t.updateStatus(ctx, ad.Provider, u)
}

// sample applies ad but for its status update, which it returns:
//
//	IsRm, or no entries        counted as walked, nothing else (pieces are immutable)
//	entries, no piece          counted in AdsWithoutPiece, entries not fetched
//	entries, piece             the first entry chunks fetched (WithEntryChunks;
//	                           all of them with 0); the bottom-k of their payload
//	                           CIDs offered to the store
//	entries not retrievable    counted in EntriesUnretrievable, LastError set,
//	(404, bad block, ...)      the ad skipped: the walk goes on
//	transient fetch failure    returned: the walk stalls at the ad and is
//	(timeout, 5xx, refused)    retried after the Ingester's backoff
//
// Walks are unordered (ingest.WithUnordered): newest first, each ad as it
// is fetched, so an ad removed by a newer one is treated like any other: a
// piece's content does not change when a provider stops advertising it.
func (a walkApplier) sample(ctx context.Context, src ingest.Syncer, ad ingest.Ad) (StatusUpdate, error) {
	t, x := a.t, ad.Ad
	t.learnProvider(a.pub, ad.Provider)
	u := StatusUpdate{Add: Counters{AdsWalked: 1}}
	if x.IsRm || !x.HasEntries() {
		return u, nil
	}
	piece, ok := PieceOf(x.ContextID, x.Metadata)
	if !ok {
		u.Add.AdsWithoutPiece = 1
		return u, nil
	}
	sample := newBottomK(t.sampleSize, ad.Provider, piece)
	err := t.ing.FirstEntries(ctx, src, ad, t.cfg.entryChunks, func(mh multihash.Multihash) error {
		if c, ok := PayloadCID(mh); ok {
			sample.add(c)
		}
		return nil
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return u, err
	case unretrievable(err):
		t.log.Warn("entries not retrievable; advertisement skipped", "publisher", a.pub.String(),
			"provider", ad.Provider.String(), "cid", ad.Cid.String(), "error", err)
		u.Add.EntriesUnretrievable = 1
		msg := fmt.Sprintf("entries of advertisement %s not retrievable: %v", ad.Cid, err)
		u.LastError = &msg
		return u, nil
	default:
		return u, err
	}
	if payloads := sample.sorted(); len(payloads) > 0 {
		if err := t.st.AddPayloads(ctx, ad.Provider, piece, payloads...); err != nil {
			return u, fmt.Errorf("piece: add payloads of %s: %w", ad.Cid, err)
		}
	} else {
		// Entries that hold no well-formed multihash: nothing to sample.
		u.Add.EntriesUnretrievable = 1
	}
	return u, nil
}

// sharedApplier is the Tracker's applier with a Store that keeps walks
// ([Walks]): it is also the walk's ingest.Positions, so the publisher's
// position lives in the Store. Apply offers the payloads (idempotent) and
// keeps the ad's counters; the walker's Move then moves the position and
// adds those counters in one StepWalk, conditioned on the position the
// step starts from and on no other Tracker's claim. So a counter moves
// exactly when the position moves past its ad: a process killed between
// Apply and Move applies the ad again (offers change nothing) and counts
// it once; two Trackers racing on one publisher move the position, and
// count the ad, once between them (the loser's Move fails, the walker
// reads the position again). A new applier is made for each walk, used by
// one goroutine.
type sharedApplier struct {
	walkApplier
	walks Walks
	// The counters of the ad applied last, added by the next Move.
	provider peer.ID
	add      Counters
}

// Apply implements [ingest.Applier].
func (a *sharedApplier) Apply(ctx context.Context, src ingest.Syncer, ad ingest.Ad) error {
	a.provider, a.add = "", Counters{}
	u, err := a.sample(ctx, src, ad)
	if err != nil {
		return err
	}
	if u.LastError != nil {
		if err := a.t.updateStatus(ctx, ad.Provider, StatusUpdate{LastError: u.LastError}); err != nil {
			return err
		}
	}
	a.provider, a.add = ad.Provider, u.Add
	return nil
}

// Position implements ingest.Positions: it claims the publisher's walk
// for this Tracker and returns its position.
func (a *sharedApplier) Position(ctx context.Context) (ingest.WalkState, error) {
	p, err := a.walks.ClaimWalk(ctx, a.pub, a.t.owner, a.t.cfg.claimTTL)
	a.t.setElsewhere(a.pub, errors.Is(err, ErrWalkClaimed))
	if err != nil {
		return ingest.WalkState{}, walkErr(err)
	}
	return ingest.WalkState{LastHead: p.LastHead, Head: p.Head, Tail: p.Tail, Collected: int(p.Walked), Applied: int(p.Walked)}, nil
}

// Move implements ingest.Positions: one StepWalk with the counters of the
// ad applied last.
func (a *sharedApplier) Move(ctx context.Context, from, to ingest.WalkState) error {
	step := WalkStep{From: position(from), To: position(to), Provider: a.provider, Add: a.add}
	a.provider, a.add = "", Counters{}
	err := a.walks.StepWalk(ctx, a.pub, a.t.owner, a.t.cfg.claimTTL, step)
	if errors.Is(err, ErrWalkClaimed) {
		a.t.setElsewhere(a.pub, true)
	}
	return walkErr(err)
}

func position(s ingest.WalkState) WalkPosition {
	return WalkPosition{LastHead: s.LastHead, Head: s.Head, Tail: s.Tail, Walked: int64(s.Collected)}
}

// walkErr wraps the Walks errors in those the ingest walker acts on.
func walkErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrWalkClaimed):
		return fmt.Errorf("%w: %w", ingest.ErrWalkedElsewhere, err)
	case errors.Is(err, ErrWalkMoved):
		return fmt.Errorf("%w: %w", ingest.ErrPositionMoved, err)
	}
	return err
}

// unretrievable reports whether err, from fetching an advertisement's
// entries, will not go away by asking again: the publisher does not have
// the block (404 or another 4xx), serves bytes that do not match it or that
// are not entries, or the entries exceed a limit. Timeouts, refused
// connections and 5xx answers are transient: the walk stalls and retries.
func unretrievable(err error) bool {
	var se *ipnisync.StatusError
	if errors.As(err, &se) {
		return se.Code >= 400 && se.Code < 500 && se.Code != http.StatusTooManyRequests && se.Code != http.StatusRequestTimeout
	}
	for _, target := range []error{
		ipnisync.ErrNotFound, ipnisync.ErrHashMismatch, ipnisync.ErrBlockTooLarge,
		ingest.ErrInvalidBlock, ingest.ErrUnsupportedEntries, ingest.ErrDepthLimit,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// bottomK keeps the k payload CIDs of one (provider, piece) with the
// smallest [PayloadHash]: exactly those a Store keeps of them, so offering
// only these loses nothing while an ad of a million entries costs the store
// k writes. It is a max-heap on the hash.
type bottomK struct {
	k        int
	provider peer.ID
	piece    cid.Cid
	h        payloadHeap
	in       map[cid.Cid]bool
}

type hashed struct {
	hash uint64
	c    cid.Cid
}

type payloadHeap []hashed

func (h payloadHeap) Len() int { return len(h) }
func (h payloadHeap) Less(i, j int) bool {
	if h[i].hash != h[j].hash {
		return h[i].hash > h[j].hash
	}
	return h[i].c.KeyString() > h[j].c.KeyString()
}
func (h payloadHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *payloadHeap) Push(x any)   { *h = append(*h, x.(hashed)) }
func (h *payloadHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newBottomK(k int, provider peer.ID, piece cid.Cid) *bottomK {
	return &bottomK{k: k, provider: provider, piece: piece, in: make(map[cid.Cid]bool)}
}

func (b *bottomK) add(c cid.Cid) {
	if b.in[c] {
		return
	}
	x := hashed{PayloadHash(b.provider, b.piece, c), c}
	if len(b.h) < b.k {
		heap.Push(&b.h, x)
		b.in[c] = true
		return
	}
	top := b.h[0]
	if x.hash > top.hash || x.hash == top.hash && x.c.KeyString() >= top.c.KeyString() {
		return
	}
	delete(b.in, top.c)
	b.h[0] = x
	heap.Fix(&b.h, 0)
	b.in[c] = true
}

// sorted returns the kept CIDs, smallest hash first.
func (b *bottomK) sorted() []cid.Cid {
	h := append(payloadHeap(nil), b.h...)
	out := make([]cid.Cid, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(hashed).c
	}
	return out
}

// updateStatus writes u for provider, bounded in time so a slow store does
// not hold a walk forever.
func (t *Tracker) updateStatus(ctx context.Context, provider peer.ID, u StatusUpdate) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := t.st.UpdateStatus(ctx, provider, u); err != nil {
		return fmt.Errorf("piece: status of %s: %w", provider, err)
	}
	return nil
}
