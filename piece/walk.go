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
// returns, so Flush has nothing to do.
type walkApplier struct {
	t   *Tracker
	pub peer.ID
}

func (a walkApplier) Flush(context.Context) error { return nil }

// Apply implements [ingest.Applier]:
//
//	IsRm, or no entries        counted as walked, nothing else (pieces are immutable)
//	entries, no piece          counted in AdsWithoutPiece, entries not fetched
//	entries, piece             entries fetched; the bottom-k of their payload
//	                           CIDs offered to the store
//	entries not retrievable    counted in EntriesUnretrievable, LastError set,
//	(404, bad block, ...)      the ad skipped: the walk goes on
//	transient fetch failure    returned: the walk stalls at the ad and is
//	(timeout, 5xx, refused)    retried after the Ingester's backoff
//
// An ad removed by a newer ad of the same walk (ingest.Ad.Removed) is
// treated like any other: a piece's content does not change when a
// provider stops advertising it.
func (a walkApplier) Apply(ctx context.Context, src ingest.Syncer, ad ingest.Ad) error {
	t, x := a.t, ad.Ad
	t.learnProvider(a.pub, ad.Provider)
	u := StatusUpdate{Add: Counters{AdsWalked: 1}}
	if x.IsRm || !x.HasEntries() {
		return t.updateStatus(ctx, ad.Provider, u)
	}
	piece, ok := PieceOf(x.ContextID, x.Metadata)
	if !ok {
		u.Add.AdsWithoutPiece = 1
		return t.updateStatus(ctx, ad.Provider, u)
	}
	sample := newBottomK(t.sampleSize, ad.Provider, piece)
	err := t.ing.Entries(ctx, src, ad, func(mh multihash.Multihash) error {
		if c, ok := PayloadCID(mh); ok {
			sample.add(c)
		}
		return nil
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return err
	case unretrievable(err):
		t.log.Warn("entries not retrievable; advertisement skipped", "publisher", a.pub.String(),
			"provider", ad.Provider.String(), "cid", ad.Cid.String(), "error", err)
		u.Add.EntriesUnretrievable = 1
		msg := fmt.Sprintf("entries of advertisement %s not retrievable: %v", ad.Cid, err)
		u.LastError = &msg
		return t.updateStatus(ctx, ad.Provider, u)
	default:
		return err
	}
	if payloads := sample.sorted(); len(payloads) > 0 {
		if err := t.st.AddPayloads(ctx, ad.Provider, piece, payloads...); err != nil {
			return fmt.Errorf("piece: add payloads of %s: %w", ad.Cid, err)
		}
	} else {
		// Entries that hold no well-formed multihash: nothing to sample.
		u.Add.EntriesUnretrievable = 1
	}
	return t.updateStatus(ctx, ad.Provider, u)
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
