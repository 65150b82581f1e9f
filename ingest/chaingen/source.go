package chaingen

// Reading and tampering with the published chain, and Source, its block source.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/indexkit/indexkit/ingest/schema"
)

// Head returns the CID of the newest ad, or cid.Undef for an empty chain.
func (c *Chain) Head() cid.Cid {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.head
}

// Block returns a copy of the block stored under id. For a CID the chain
// holds no block for it returns an error wrapping [ErrNotFound]; for a done
// ctx, ctx's error.
func (c *Chain) Block(ctx context.Context, id cid.Cid) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	b, ok := c.blocks[id]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("chaingen: block %s: %w", id, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// Blocks returns the number of blocks the chain holds: ads and entry
// chunks.
func (c *Chain) Blocks() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.blocks)
}

// Len returns the number of ads.
func (c *Chain) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.ops)
}

// Ad decodes the i-th ad, oldest first (0 is the genesis ad). It returns
// the decoder's error if the block was corrupted or replaced.
func (c *Chain) Ad(i int) (*schema.Advertisement, error) {
	c.mu.RLock()
	if i < 0 || i >= len(c.Ads) {
		c.mu.RUnlock()
		return nil, fmt.Errorf("chaingen: ad %d of %d: %w", i, len(c.ops), ErrNotFound)
	}
	id := c.Ads[i]
	data := c.blocks[id]
	c.mu.RUnlock()
	return schema.DecodeAdvertisement(id, data)
}

// Corrupt flips one bit in the middle of the block under id, so that it no
// longer hashes to id: decoding it gives an error wrapping
// [schema.ErrHashMismatch]. It returns an error wrapping [ErrNotFound] for
// an unknown id.
func (c *Chain) Corrupt(id cid.Cid) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.blocks[id]
	if !ok || len(b) == 0 {
		return fmt.Errorf("chaingen: corrupt %s: %w", id, ErrNotFound)
	}
	b = bytes.Clone(b)
	b[len(b)/2] ^= 0x01
	c.blocks[id] = b
	return nil
}

// SetBlock stores data under id, replacing the block there, if any. Use it
// to serve bytes that do not match their CID, an oversize block, a block
// of an unknown codec, or a hand-built ad (say, with a bad signature)
// under its own CID. The chain keeps a copy of data. The model does not
// change: it stays what the generated chain means.
func (c *Chain) SetBlock(id cid.Cid, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks[id] = bytes.Clone(data)
}

// RemoveBlock drops the block under id, so fetching it fails with
// [ErrNotFound]: a publisher that lost part of its chain.
func (c *Chain) RemoveBlock(id cid.Cid) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.blocks, id)
}

// Source adapts the chain to the shape of a sync client or a publisher's
// block source: Head(ctx) and Block(ctx, id). It reads the chain live, so
// it sees Extend, Corrupt and SetBlock as they happen.
func (c *Chain) Source() *Source { return &Source{c: c} }

// Source serves a [Chain] or an [OnDemand] chain through context-taking
// methods. It is safe for concurrent use.
type Source struct{ c blockReader }

// blockReader is what a Source reads: a Chain or an OnDemand.
type blockReader interface {
	Head() cid.Cid
	Block(ctx context.Context, id cid.Cid) ([]byte, error)
}

// Head returns the chain's current head, cid.Undef for an empty chain,
// and an error only when ctx is done.
func (s *Source) Head(ctx context.Context) (cid.Cid, error) {
	if err := ctx.Err(); err != nil {
		return cid.Undef, err
	}
	return s.c.Head(), nil
}

// Block is [Chain.Block] or [OnDemand.Block].
func (s *Source) Block(ctx context.Context, id cid.Cid) ([]byte, error) {
	return s.c.Block(ctx, id)
}
