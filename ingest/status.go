package ingest

import (
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Hooks are optional callbacks for metrics. They are called synchronously
// from the walking goroutine and must return quickly; a nil hook is
// skipped.
type Hooks struct {
	// AdWalked is called for each advertisement a walk collects.
	AdWalked func(publisher peer.ID, ad cid.Cid)
	// AdApplied is called for each advertisement applied, with the time
	// applying it took (entry fetches included).
	AdApplied func(publisher, provider peer.ID, ad cid.Cid, d time.Duration)
	// EntriesIndexed is called by the [Ingester] after it put n
	// multihashes of an advertisement into the store.
	EntriesIndexed func(publisher, provider peer.ID, ad cid.Cid, n int)
	// WalkDone is called when a walk has applied every advertisement up
	// to head.
	WalkDone func(publisher peer.ID, head cid.Cid, ads int, d time.Duration)
	// SyncFailed is called by the [Ingester] when a walk of publisher
	// fails.
	SyncFailed func(publisher peer.ID, err error)
}

// Status is a snapshot of one publisher's ingestion, from
// [Ingester.Status].
type Status struct {
	Publisher peer.ID
	// Addrs are the publisher's verified addresses: those from which its
	// signed head was last fetched.
	Addrs []multiaddr.Multiaddr
	// Announced is the newest head announced and not yet taken by a walk.
	Announced cid.Cid
	// Head is the head of the walk in progress, and LastHead the head of
	// the last walk that finished.
	Head     cid.Cid
	LastHead cid.Cid
	// Pending is the lag: advertisements collected by the walk in
	// progress and not yet applied.
	Pending int
	// Walking is true while a walk of the publisher runs.
	Walking bool
	// Verified is true once a head signed by the publisher was fetched
	// from Addrs (by this Ingester or an earlier one on the datastore).
	// A publisher that never verified is only announced: nothing of it is
	// persisted, and if its head does not verify it is held in memory with
	// its error until it expires ([WithUnverifiedLimit]).
	Verified bool
	// AdsWalked, AdsApplied and EntriesIndexed count, since the Ingester
	// was made, the advertisements collected, those applied, and the
	// multihashes put into the store.
	AdsWalked      uint64
	AdsApplied     uint64
	EntriesIndexed uint64
	// Failures counts consecutive failed walks; RetryAt is when the next
	// one may start.
	Failures int
	RetryAt  time.Time
	// LastError is the error of the last failed walk, kept after later
	// successes, and LastErrorTime when it happened.
	LastError     error
	LastErrorTime time.Time
}
