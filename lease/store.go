package lease

import (
	"context"
	"iter"
)

// Store is the catalog with its leases and auctions. Backends live in
// subpackages (lease/memory); all of them pass the suite in
// lease/leasetest. A Store is safe for concurrent use; after Close every
// method returns an error wrapping [ErrClosed].
//
// There is no direct way to take a lease: an item is granted only by an
// auction, through Bid and Evaluate.
type Store interface {
	// Put creates the row of it.ID or replaces its catalog fields (Commit,
	// Size, MaxBids, MinBid), leaving ownership alone.
	Put(ctx context.Context, it Item) error

	// Get returns the row of item, or an error wrapping ErrNotFound.
	Get(ctx context.Context, item string) (Row, error)

	// Bid places node's bid of freeMemory bytes on item, opening an auction
	// if none is open. It fails with ErrLeased, ErrBidTooLow, ErrBidPending
	// (node has an unaccepted bid anywhere) or ErrAuctionClosed. If the bid
	// brings the auction to its threshold, Bid evaluates it at once and
	// returns the evaluation in BidResult.Result.
	Bid(ctx context.Context, item, node string, freeMemory int64) (BidResult, error)

	// Evaluate closes item's auction if it is due: its window has passed or
	// its bids reached the threshold. Any number of callers may evaluate at
	// once; exactly one evaluation takes effect per round and the others
	// see NoAuction (or NotDue).
	Evaluate(ctx context.Context, item string) (AuctionResult, error)

	// Renew extends each lease by the store's TTL from now. Each Renewal
	// says how its lease fared; the error is for the call as a whole.
	Renew(ctx context.Context, refs ...Ref) ([]Renewal, error)

	// Release gives up a lease at once; the item becomes Idle.
	Release(ctx context.Context, ref Ref) error

	// Update applies an owner's mutation to its row and returns the row.
	Update(ctx context.Context, ref Ref, m Mutation) (Row, error)

	// Heartbeat records that node is alive. With dynamic max-bids, the
	// number of nodes that heartbeated within the liveness window is the
	// short-circuit threshold.
	Heartbeat(ctx context.Context, node string) error

	// Close releases the store's resources. It is safe to call more than
	// once.
	Close() error
}

// LiveCounter is implemented by stores that can count live nodes.
type LiveCounter interface {
	// LiveNodes returns how many nodes heartbeated within the liveness
	// window.
	LiveNodes(ctx context.Context) (int, error)
}

// Lister is implemented by stores that can list their rows, which a node
// needs to find items to bid on.
type Lister interface {
	// Rows yields every row, in no particular order. It stops at the
	// first error, which it yields with a zero Row.
	Rows(ctx context.Context) iter.Seq2[Row, error]
}
