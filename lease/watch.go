package lease

import (
	"context"
	"iter"
)

// Change is one entry of a store's change feed ([Watcher]).
type Change struct {
	// Reset says the feed may have missed changes before this point: it
	// has just started, or reconnected, or the history it resumed from was
	// compacted or trimmed away. The consumer lists every row ([Lister])
	// before it trusts its view again. A Reset carries no Row.
	Reset bool
	// Row is the row as the write left it, on the store's clock.
	Row Row
}

// Watcher is implemented by stores with a change feed, so that a node can
// keep a view of the catalog without listing every row again and again.
//
// Watch yields a Reset first, then one Change for each write that changes
// a row's catalog fields, ownership or auction: Put, a Bid that opens or
// joins an auction, an evaluation that closes one, Release, Update, and a
// grant or release of any kind. A renewal that moves only Expiry may be
// left out, and a lease that lapses need not be reported: a consumer judges
// expiry from the Expiry it has (by its own clock, with a margin) and
// confirms it with the store. Changes of one item arrive in the order they
// took effect; a consumer applies a Row only if its Version, Fence, Round
// and Bids do not go back (see [Row.Newer]).
//
// A lost connection is retried and followed by a Reset. Watch ends when
// ctx ends (without an error) or the consumer stops; an error it cannot
// recover from (a closed store, a refused request) is yielded once, with a
// zero Change, and ends it.
type Watcher interface {
	Watch(ctx context.Context) iter.Seq2[Change, error]
}

// Newer reports whether r describes a later state of its item than old:
// a later grant (Fence), a later auction (Round), a later catalog or owner
// write (Version), a later auction closed without a winner (Unleased, which
// only a grant resets, and a grant moves the Fence), or more bids in the
// same auction. Feeds deliver one item's changes in order, but a consumer
// that also lists rows can see an older row after a newer one.
func (r Row) Newer(old Row) bool {
	switch {
	case r.Fence != old.Fence:
		return r.Fence > old.Fence
	case r.Round != old.Round:
		return r.Round > old.Round
	case r.Version != old.Version:
		return r.Version > old.Version
	case r.Unleased != old.Unleased:
		// An auction that closes without a winner keeps Fence, Round and
		// Version and drops Bids to 0: without this case the closed row
		// would look older than the open one.
		return r.Unleased > old.Unleased
	case r.Bids != old.Bids:
		return r.Bids > old.Bids
	}
	// Same grant, round and version: a release or an expiry leaves the
	// fence; prefer the row that says the lease ended.
	return r.Owner == "" && old.Owner != ""
}

// LapseReporter is implemented by stores whose change feed ([Watcher])
// also reports each lease that lapses, as it lapses: a Change whose Row
// is no longer held, as for a release. A consumer of such a feed need not
// judge another node's lease lapsed from its Expiry (renewals move it
// unreported), and its listings are only a safety net for a feed that
// failed without a Reset, so they can be rare. lease/etcd reports lapses
// (an etcd lease's end deletes the owner key, and the feed follows those
// keys); lease/memory and lease/redis do not.
type LapseReporter interface {
	ReportsLapses() bool
}

// RowExpiryReporter is implemented by stores whose leased rows may carry
// no Expiry ([WithoutRowExpiry]): ReportsRowExpiry says whether they do.
// A store that does not implement it sets Expiry on every leased row.
// Lapses are then known from the change feed ([LapseReporter]) or a Get
// (an expired lease reads as Idle), not from Expiry.
type RowExpiryReporter interface {
	ReportsRowExpiry() bool
}

// MaxBidsSetter is implemented by stores whose static short-circuit
// threshold ([WithMaxBids]) can change while they run. The new value takes
// effect at the next Bid or Evaluate through this Store value; an auction
// in progress keeps its bids (a lowered threshold closes it with all of
// them). Nodes of a fleet that share a catalog each set their own Store:
// the fleet distributes the setting.
type MaxBidsSetter interface {
	SetMaxBids(n int) error
}
