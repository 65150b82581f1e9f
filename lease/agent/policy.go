package agent

import (
	"context"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Indexer builds and drops a node's in-memory indexes. A [Manager] calls
// Index for each item it wins and Drop when it gives the item up (evicted,
// lost, drained, or indexing failed). Both are called from the manager's
// goroutines and must be safe for concurrent use.
type Indexer interface {
	// Index builds the index of item at item.Commit and returns its
	// in-memory size in bytes. ctx is cancelled when the lease is lost or
	// the manager stops waiting for it. The manager calls it again for an
	// item it holds when the row's Commit changes: the Indexer keeps
	// serving the index it has until the new one is built, and replaces it
	// only if Index succeeds.
	Index(ctx context.Context, item lease.Row) (size int64, err error)
	// Drop forgets the index of item. After a lost lease the manager may
	// call it late (WithKeepLost), or not at all if it wins the item back
	// at the same commit and serves the index it kept.
	Drop(item string)
}

// Resident is what an [EvictionPolicy] knows about an indexed item.
type Resident struct {
	Item      string
	Size      int64     // bytes, as Index reported
	LastTouch time.Time // the last Touch, or when the item was won
	Touches   uint64    // Touch calls since the item was won
}

// EvictionPolicy orders eviction candidates: it reports whether a should
// be evicted before b.
type EvictionPolicy func(a, b Resident) bool

// EvictLRU evicts the least recently touched item first.
func EvictLRU(a, b Resident) bool { return a.LastTouch.Before(b.LastTouch) }

// EvictSizeTraffic evicts the item with the lowest size × traffic first
// (the cheapest to lose), the least recently touched among equals.
func EvictSizeTraffic(a, b Resident) bool {
	ca, cb := float64(a.Size)*float64(a.Touches), float64(b.Size)*float64(b.Touches)
	if ca != cb {
		return ca < cb
	}
	return EvictLRU(a, b)
}
