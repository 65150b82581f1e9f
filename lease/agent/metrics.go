package agent

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/indexkit/indexkit/lease"
)

// Metrics is a ready-made set of counters and gauges fed by [lease.Hooks],
// [lease.HolderHooks] and [Hooks], for a binary that exports them (as JSON, Prometheus, …)
// without writing the hooks itself. The zero value is ready; a Metrics
// must not be copied once its hooks are in use. It is safe for concurrent
// use, and its hooks never block.
//
// Connect it where the events happen, so that each is counted once:
//
//	var met agent.Metrics
//	s, err := redis.New(rdb, "fleet:", lease.WithHooks(met.StoreHooks())) // auctions and bids
//	mgr, err := agent.NewManager(s, node,
//		agent.WithIndexer(idx),
//		agent.WithHooks(met.Hooks())) // wins, indexing, evictions, gauges, renewals and losses
//	...
//	json.NewEncoder(w).Encode(met.Snapshot())
//
// The store's hooks see the auctions and bids it handles in this process:
// with lease/redis or lease/etcd, those of this node's calls; with a
// lease/memory store shared by several managers, the whole fleet's. A
// manager also reports its own bids to its Hooks' BidPlaced and
// BidRejected, which [Metrics.Hooks] leaves nil: the store's StoreHooks
// count them.
type Metrics struct {
	auctionsStarted, auctionsWon, auctionsNoWinner atomic.Uint64
	auctionsShort, auctionsTimedOut, itemsStarved  atomic.Uint64

	bidsPlaced                                  atomic.Uint64
	rejPending, rejTooLow, rejLeased, rejClosed atomic.Uint64

	maxBids, liveNodes, held atomic.Int64

	won, renewed, lost, released atomic.Uint64
	indexed, indexFailed         atomic.Uint64
	evictions, evictedBytes      atomic.Uint64
	reused, unfit                atomic.Uint64

	unclaimed, saturated, lastServed atomic.Int64
	grows, shrinks                   atomic.Uint64
}

// MetricsSnapshot is a copy of a [Metrics] at one moment. Counters count
// events since the Metrics was created; gauges hold their last value.
type MetricsSnapshot struct {
	AuctionsStarted        uint64 // first bids that opened an auction
	AuctionsWon            uint64 // auctions closed with a grant
	AuctionsNoWinner       uint64 // auctions closed without one
	AuctionsShortCircuited uint64 // closed because the bids reached the threshold
	AuctionsTimedOut       uint64 // closed because the window passed
	ItemsStarved           uint64 // closes without a winner at or past StarveAfter

	BidsPlaced          uint64
	BidsRejectedPending uint64 // lease.ErrBidPending: the node had a bid pending
	BidsRejectedTooLow  uint64 // lease.ErrBidTooLow: below the item's MinBid
	BidsRejectedLeased  uint64 // lease.ErrLeased: the item is leased
	BidsRejectedClosed  uint64 // lease.ErrAuctionClosed: after the window

	// EffectiveMaxBids is the threshold (lease.AuctionResult.Threshold) of the
	// last auction closed: the override, live count or static MaxBids in
	// force; 0 is no short circuit.
	EffectiveMaxBids int
	// The manager gauges come from one [Manager]: several managers sharing
	// a Metrics overwrite each other's.
	LiveNodes  int // the live-node count at the manager's last heartbeat
	LeasesHeld int // leases the manager holds

	LeasesWon      uint64 // grants the manager acquired
	LeasesRenewed  uint64 // successful renewals
	LeasesLost     uint64 // leases that ended without the holder releasing them
	LeasesReleased uint64 // leases the holder released (release, drain, eviction)
	Indexed        uint64 // Index calls that succeeded
	IndexFailed    uint64 // Index calls that failed
	Evictions      uint64 // items evicted over budget
	EvictedBytes   uint64 // their sizes, summed
	Reused         uint64 // wins served from a kept index, without an Index call
	// ItemsTooLarge counts the items the manager found unowned and above
	// its whole budget (Hooks.Starved), each once: starved items, since no
	// bid on them can be placed, so no auction of theirs ever closes.
	ItemsTooLarge uint64

	// From the manager's last scan ([Signals]): items without a live
	// lease, and those of them saturated (see [Signals].Saturated).
	Unclaimed, Saturated int
	// LastServed is the manager's last Touch or Serve, zero if none.
	LastServed time.Time
	// ScaleGrow and ScaleShrink count the autoscaler's decisions.
	ScaleGrow, ScaleShrink uint64
}

// StoreHooks returns hooks that count every [lease.Hooks] event, for a
// store (lease.WithHooks): auctions and bids.
func (m *Metrics) StoreHooks() lease.Hooks {
	var h lease.Hooks
	h.AuctionStarted = func(string, uint64) { m.auctionsStarted.Add(1) }
	h.AuctionWon = func(r lease.AuctionResult) {
		m.auctionsWon.Add(1)
		m.maxBids.Store(int64(r.Threshold))
	}
	h.AuctionNoWinner = func(r lease.AuctionResult) {
		m.auctionsNoWinner.Add(1)
		m.maxBids.Store(int64(r.Threshold))
	}
	h.AuctionShortCircuited = func(lease.AuctionResult) { m.auctionsShort.Add(1) }
	h.AuctionTimedOut = func(lease.AuctionResult) { m.auctionsTimedOut.Add(1) }
	h.ItemStarved = func(string, int) { m.itemsStarved.Add(1) }
	h.BidPlaced = func(string, string, int64) { m.bidsPlaced.Add(1) }
	h.BidRejected = func(_, _ string, reason error) {
		switch {
		case errors.Is(reason, lease.ErrBidPending):
			m.rejPending.Add(1)
		case errors.Is(reason, lease.ErrBidTooLow):
			m.rejTooLow.Add(1)
		case errors.Is(reason, lease.ErrLeased):
			m.rejLeased.Add(1)
		case errors.Is(reason, lease.ErrAuctionClosed):
			m.rejClosed.Add(1)
		}
	}
	return h
}

// LeaseHooks returns hooks that count lease renewals, losses and
// releases, for a [lease.Lease] (lease.WithHolderHooks); [Metrics.Hooks]
// gives them to a [Manager]'s leases ([Hooks].Lease).
func (m *Metrics) LeaseHooks() lease.HolderHooks {
	return lease.HolderHooks{
		LeaseRenewed: func(lease.Ref) { m.renewed.Add(1) },
		LeaseLost: func(_ lease.Ref, reason error) {
			if errors.Is(reason, lease.ErrReleased) {
				m.released.Add(1)
			} else {
				m.lost.Add(1)
			}
		},
	}
}

// Hooks returns hooks that count a [Manager]'s wins, indexing and
// evictions, keep its held-lease and live-node gauges, and count its
// leases' renewals and losses (Lease: [Metrics.LeaseHooks]) ([WithHooks]).
func (m *Metrics) Hooks() Hooks {
	return Hooks{
		Won: func(lease.Ref) { m.won.Add(1) },
		Indexed: func(_ lease.Ref, _ int64, err error) {
			if err != nil {
				m.indexFailed.Add(1)
			} else {
				m.indexed.Add(1)
			}
		},
		Evicted: func(_ lease.Ref, size int64) {
			m.evictions.Add(1)
			m.evictedBytes.Add(uint64(max(size, 0)))
		},
		Reused:    func(lease.Ref, int64) { m.reused.Add(1) },
		Starved:   func(string, int64) { m.unfit.Add(1) },
		Held:      func(n int) { m.held.Store(int64(n)) },
		LiveNodes: func(n int) { m.liveNodes.Store(int64(n)) },
		Scanned: func(s Signals) {
			m.unclaimed.Store(int64(s.Unclaimed))
			m.saturated.Store(int64(s.Saturated))
			if !s.LastServed.IsZero() {
				m.lastServed.Store(s.LastServed.UnixNano())
			}
		},
		Scale: func(d Decision, _ Signals) {
			switch d {
			case Grow:
				m.grows.Add(1)
			case Shrink:
				m.shrinks.Add(1)
			}
		},
		Lease: m.LeaseHooks(),
	}
}

// Snapshot returns the current values. Each is read atomically, the set
// as a whole is not: events may land between two reads.
func (m *Metrics) Snapshot() MetricsSnapshot {
	return MetricsSnapshot{
		AuctionsStarted:        m.auctionsStarted.Load(),
		AuctionsWon:            m.auctionsWon.Load(),
		AuctionsNoWinner:       m.auctionsNoWinner.Load(),
		AuctionsShortCircuited: m.auctionsShort.Load(),
		AuctionsTimedOut:       m.auctionsTimedOut.Load(),
		ItemsStarved:           m.itemsStarved.Load(),
		BidsPlaced:             m.bidsPlaced.Load(),
		BidsRejectedPending:    m.rejPending.Load(),
		BidsRejectedTooLow:     m.rejTooLow.Load(),
		BidsRejectedLeased:     m.rejLeased.Load(),
		BidsRejectedClosed:     m.rejClosed.Load(),
		EffectiveMaxBids:       int(m.maxBids.Load()),
		LiveNodes:              int(m.liveNodes.Load()),
		LeasesHeld:             int(m.held.Load()),
		LeasesWon:              m.won.Load(),
		LeasesRenewed:          m.renewed.Load(),
		LeasesLost:             m.lost.Load(),
		LeasesReleased:         m.released.Load(),
		Indexed:                m.indexed.Load(),
		IndexFailed:            m.indexFailed.Load(),
		Evictions:              m.evictions.Load(),
		EvictedBytes:           m.evictedBytes.Load(),
		Reused:                 m.reused.Load(),
		ItemsTooLarge:          m.unfit.Load(),
		Unclaimed:              int(m.unclaimed.Load()),
		Saturated:              int(m.saturated.Load()),
		LastServed:             unixNano(m.lastServed.Load()),
		ScaleGrow:              m.grows.Load(),
		ScaleShrink:            m.shrinks.Load(),
	}
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
