package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Syncer fetches one publisher's advertisement chain: its current head and
// blocks by CID. An ingest/ipnisync client satisfies it; so does any block
// source a test builds. Block need not verify the bytes against the CID:
// the walker does. Both must return when ctx ends.
//
// A Syncer whose Block does verify them may say so with a method
//
//	BlocksVerified() bool
//
// returning true, as an ingest/ipnisync Client does: the walker then does
// not hash entry chunks a second time (it still checks their size, codec
// and format, and hashes advertisements and HAMT nodes itself). A Syncer
// that says so and returns bytes that do not hash to the CID asked for
// gets them indexed.
//
// A Syncer may also reuse the memory of the blocks it returns, with a
// method
//
//	ReleaseBlock(block []byte)
//
// as an ingest/ipnisync Client has: the walker then gives back each entry
// chunk whose multihashes it has put into the store (which copies them),
// once it holds no reference into it, and the Syncer may return that
// memory from a later Block. It gives back nothing else: not
// advertisements, not HAMT nodes, and not the blocks that
// [Ingester.Entries] and [Ingester.FirstEntries] walk for their callers,
// which may keep what they are given. Each block is given back at most
// once. A Syncer that embeds an ipnisync Client inherits both methods: one
// that keeps or shares the blocks it returns (a cache of blocks) must not
// offer ReleaseBlock, or the Client reads other blocks into what it keeps.
type Syncer interface {
	// Head returns the CID of the publisher's newest advertisement, or
	// cid.Undef when it has published none. It must verify that the head
	// is signed by the publisher (an ingest/ipnisync client checks the
	// signed head against the publisher's peer ID): the Ingester trusts an
	// announce only once Head succeeds at the announced addresses.
	Head(ctx context.Context) (cid.Cid, error)
	// Block returns the block of c.
	Block(ctx context.Context, c cid.Cid) ([]byte, error)
}

// SyncerFunc makes the [Syncer] of a publisher from the addresses it
// announced. The [Ingester] calls it when it first walks a publisher and
// again when the publisher announces other addresses. A typical one wraps
// an ingest/ipnisync client.
type SyncerFunc func(publisher peer.ID, addrs []multiaddr.Multiaddr) (Syncer, error)

// limitedSyncer bounds each request by a timeout and spaces requests by a
// token bucket, and wraps failures in ErrFetch.
type limitedSyncer struct {
	s       Syncer
	timeout time.Duration
	bucket  *bucket // nil: no rate limit
}

func newLimitedSyncer(s Syncer, cfg *walkerConfig) *limitedSyncer {
	ls := &limitedSyncer{s: s, timeout: cfg.requestTimeout}
	if cfg.rate > 0 {
		ls.bucket = &bucket{rate: cfg.rate, burst: float64(cfg.burst), tokens: float64(cfg.burst)}
	}
	return ls
}

func (ls *limitedSyncer) Head(ctx context.Context) (cid.Cid, error) {
	if err := ls.bucket.wait(ctx); err != nil {
		return cid.Undef, fmt.Errorf("%w: head: %w", ErrFetch, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ls.timeout)
	defer cancel()
	c, err := ls.s.Head(ctx)
	if err != nil {
		return cid.Undef, fmt.Errorf("%w: head: %w", ErrFetch, err)
	}
	return c, nil
}

func (ls *limitedSyncer) Block(ctx context.Context, c cid.Cid) ([]byte, error) {
	if err := ls.bucket.wait(ctx); err != nil {
		return nil, fmt.Errorf("%w: block %s: %w", ErrFetch, c, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ls.timeout)
	defer cancel()
	b, err := ls.s.Block(ctx, c)
	if err == nil {
		err = ctx.Err() // a Syncer that ignored the deadline still fails it
	}
	if err != nil {
		return nil, fmt.Errorf("%w: block %s: %w", ErrFetch, c, err)
	}
	return b, nil
}

// bucket is a token bucket; a nil *bucket never waits.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// wait takes one token, sleeping until there is one or ctx ends.
func (b *bucket) wait(ctx context.Context) error {
	if b == nil {
		return ctx.Err()
	}
	b.mu.Lock()
	now := time.Now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	b.tokens--
	var d time.Duration
	if b.tokens < 0 {
		d = time.Duration(-b.tokens / b.rate * float64(time.Second))
	}
	b.mu.Unlock()
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		b.tokens++ // give the token back
		b.mu.Unlock()
		return ctx.Err()
	}
}

// blocksVerified reports whether the Block of src, unwrapped from the
// walker's own wrappers, verifies bytes against the CID (see [Syncer]).
func blocksVerified(src Syncer) bool {
	s, ok := unwrapSyncer(src).(interface{ BlocksVerified() bool })
	return ok && s.BlocksVerified()
}

// blockReleaser returns the ReleaseBlock method of src, unwrapped from the
// walker's own wrappers, or nil if it has none (see [Syncer]).
func blockReleaser(src Syncer) func([]byte) {
	if s, ok := unwrapSyncer(src).(interface{ ReleaseBlock([]byte) }); ok {
		return s.ReleaseBlock
	}
	return nil
}

// unwrapSyncer returns the Syncer that src, one of the walker's wrappers,
// wraps.
func unwrapSyncer(src Syncer) Syncer {
	for {
		switch s := src.(type) {
		case *limitedSyncer:
			src = s.s
		case meteredSyncer:
			src = s.Syncer
		default:
			return src
		}
	}
}
