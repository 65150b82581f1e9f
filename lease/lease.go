package lease

import (
	"fmt"
	"time"
)

// Fence is a fencing token. Every grant of an item carries a fence strictly
// greater than the fence of every earlier grant of that item, so a resource
// that remembers the highest fence it has seen can refuse writes from a
// holder that lost the item (see [CheckFence]). Zero means "never granted".
type Fence uint64

// CheckFence is the check a fence-aware resource applies to each write: it
// returns an error wrapping [ErrStaleFence] if got is older than last, the
// highest fence the resource has accepted for the item.
func CheckFence(last, got Fence) error {
	if got < last {
		return fmt.Errorf("lease: fence %d after %d: %w", got, last, ErrStaleFence)
	}
	return nil
}

// State is the ownership state of an item.
type State uint8

const (
	// Idle: nobody holds the item; nodes may bid on it.
	Idle State = iota
	// Leased: a holder owns the item until its lease expires.
	Leased
	// Draining: the holder still owns the item but is finishing in-flight
	// work before it releases it; routers should prefer to send new work
	// elsewhere once another owner is ready.
	Draining
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Leased:
		return "leased"
	case Draining:
		return "draining"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Item is the part of a catalog row that the catalog's administrator sets
// with [Store.Put]: what to index and how to auction it.
type Item struct {
	ID     string
	Commit string // the version of the source to index
	Size   int64  // the item's last known in-memory size, in bytes
	// MaxBids overrides the store's short-circuit threshold for this item
	// when positive.
	MaxBids int
	// MinBid is the least free memory, in bytes, a bid must offer. A holder
	// that reports the item's size through [Mutation.Size] raises it to
	// size × the store's MinBidFactor.
	MinBid int64
}

// Row is one catalog row: an item and its ownership, as [Store.Get]
// returns it. An expired lease reads as Idle with no Owner; the Fence of
// the last grant stays.
type Row struct {
	Item
	Owner       string    // the holder, "" when idle
	Expiry      time.Time // lease expiry on the store's clock; zero when idle (or unrecorded: RowExpiryReporter)
	Fence       Fence     // fence of the newest grant, 0 if never granted
	State       State
	Version     uint64    // bumped by every Put and Update
	Ready       bool      // the owner serves the item (reset by each grant)
	LastIndexed time.Time // set by the owner

	Round           uint64    // auctions opened so far
	Bids            int       // bids in the open auction
	AuctionDeadline time.Time // close of the open auction's window; zero if none
	// Unleased counts the auctions closed without a winner since the
	// item's last grant: the starvation signal for an autoscaler.
	Unleased int
}

// Ref names one grant: the item, its holder and the grant's fence. Owner
// operations carry it and are refused unless it is the item's current,
// unexpired grant.
type Ref struct {
	Item   string
	Holder string
	Fence  Fence
}

// Bid is one bid of an auction.
type Bid struct {
	Node       string
	FreeMemory int64  // bytes the node offers
	Seq        uint64 // arrival order on the store, from 1 in each auction
}

// Beats reports whether b ranks above o: more free memory wins, and an
// equal offer that arrived earlier on the store wins.
func (b Bid) Beats(o Bid) bool {
	if b.FreeMemory != o.FreeMemory {
		return b.FreeMemory > o.FreeMemory
	}
	return b.Seq < o.Seq
}

// Grant is a lease granted by an auction.
type Grant struct {
	Ref
	Expiry time.Time     // on the store's clock
	TTL    time.Duration // the lease's time to live from the grant
	Round  uint64
	Bids   int // bids the auction held
}

// BidResult is what [Store.Bid] returns for a placed bid.
type BidResult struct {
	Round uint64 // the auction's round
	Seq   uint64 // the bid's arrival order in it
	Bids  int    // bids in the auction, this one included
	// Result is set when this bid reached the auction's threshold and
	// closed it at once (a short circuit); its Grant may name another node.
	Result *AuctionResult
}

// Outcome says what an evaluation did.
type Outcome uint8

const (
	// NoAuction: no auction is open on the item (none started, or another
	// evaluation closed it first).
	NoAuction Outcome = iota
	// NotDue: the auction is open, its window has not passed and it has
	// fewer bids than its threshold; or a store with [Config.LossGuard]
	// holds grants after finding its data gone, until Deadline.
	NotDue
	// Granted: the auction closed and its best eligible bid won.
	Granted
	// NoWinner: the auction closed and no bid was eligible.
	NoWinner
)

func (o Outcome) String() string {
	switch o {
	case NoAuction:
		return "no auction"
	case NotDue:
		return "not due"
	case Granted:
		return "granted"
	case NoWinner:
		return "no winner"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// AuctionResult is the result of an evaluation.
type AuctionResult struct {
	Item    string
	Round   uint64
	Outcome Outcome
	Grant   *Grant // set when Outcome is Granted
	// ShortCircuited: closed because the bids reached the threshold.
	// TimedOut: closed because the window passed.
	ShortCircuited, TimedOut bool
	Bids                     int
	Unleased                 int  // the row's Unleased after this evaluation
	Starved                  bool // Unleased reached the store's StarveAfter
	Deadline                 time.Time
	// Threshold is the effective max-bids this evaluation applied: the
	// item's MaxBids override, else the live-node count (DynamicMaxBids),
	// else the static MaxBids; 0 means no short circuit. It is 0 when
	// Outcome is NoAuction.
	Threshold int
}

// Mutation is an owner's change to its row. Nil fields are left alone.
type Mutation struct {
	Commit      *string
	Ready       *bool
	Size        *int64 // also sets MinBid to Size × MinBidFactor
	LastIndexed *time.Time
	// Draining moves a leased item to Draining; it cannot be undone except
	// by releasing.
	Draining bool
	// IfVersion, when set, makes the update fail with ErrVersionConflict
	// unless the row's Version equals it.
	IfVersion *uint64
}

// Renewal is the outcome of renewing one lease.
type Renewal struct {
	Ref
	Expiry time.Time     // the new expiry on the store's clock
	TTL    time.Duration // the lease is valid for TTL from the renewal
	Err    error         // wraps ErrNotHeld, ErrStaleFence or ErrNotFound
}
