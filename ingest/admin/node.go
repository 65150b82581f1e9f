package admin

import (
	"context"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Node is the indexer side of the admin API: what the assigner needs from
// an indexer. The indexer binary implements it with small adapters over
// its ingester, freezer and handoff receiver; [NewHandler] serves it.
//
// Methods are called concurrently, one call per request, with the
// request's context. They report the conditions of the contract with the
// sentinels of this package (wrapped or not): [ErrAlreadyAssigned],
// [ErrNotAssigned], [ErrNotAllowed], [ErrNoAssigner], [ErrUnavailable],
// [ErrFrozen], [ErrUnknownPublisher]. Any other error is answered 500.
//
// The optional capabilities are separate interfaces the handler finds by
// type assertion: [Freezer] (PUT /freeze), [Syncer] (POST /ingest/sync/{id})
// and [IngestReporter] (GET /ingest/status). A Node without one answers
// that route 501 ([ErrNotSupported]).
type Node interface {
	// Assign makes publisher one of the node's assigned publishers, so its
	// announces are accepted. ErrAlreadyAssigned when it already is,
	// ErrFrozen when the node is frozen (a frozen node takes no new
	// publishers), ErrNotAllowed when policy rejects it, ErrNoAssigner when
	// the node does not work with an assigner.
	Assign(ctx context.Context, publisher peer.ID) error

	// Unassign removes publisher from the assigned publishers.
	// ErrNotAssigned when it was not assigned.
	Unassign(ctx context.Context, publisher peer.ID) error

	// Assigned lists the assigned publishers, with the frozen node each
	// handed-off one continues. An empty list is answered 204.
	Assigned(ctx context.Context) ([]Assignment, error)

	// Preferred lists the publishers the node holds data for but is not
	// assigned. An empty list is answered 204.
	Preferred(ctx context.Context) ([]peer.ID, error)

	// Handoff takes publisher over from the frozen node req names, so that
	// ingestion continues right after the frozen node's last
	// advertisement, and records the assignment with Continued =
	// req.FrozenID. The handler has checked req (a valid FrozenID, an
	// absolute http(s) FrozenURL). ErrAlreadyAssigned when publisher is
	// already assigned here, ErrUnknownPublisher when the frozen node has
	// no provider of publisher, ErrFrozen when this node is frozen too.
	Handoff(ctx context.Context, publisher peer.ID, req HandoffRequest) error

	// Status reports whether the node is frozen, its peer ID and its disk
	// usage. Usage is −1 when it cannot be read, which is no error.
	Status(ctx context.Context) (Status, error)
}

// Freezer is the optional capability behind PUT /freeze.
type Freezer interface {
	// Freeze freezes the node. Freezing a frozen node succeeds;
	// ErrDisabled when freezing is disabled.
	Freeze(ctx context.Context) error
}

// Syncer is the optional capability behind POST /ingest/sync/{id}.
type Syncer interface {
	// Sync starts a walk of publisher's advertisement chain and returns
	// without waiting for it (the handler answers 202). ErrSyncing when a
	// sync of publisher started this way is still running.
	Sync(ctx context.Context, publisher peer.ID, req SyncRequest) error
}

// IngestReporter is the optional capability behind GET /ingest/status.
type IngestReporter interface {
	// IngestStatus reports the walk progress of every publisher the node
	// knows, in any order: the handler sorts it by publisher and answers
	// the page the request asks for. An empty page is answered 204.
	IngestStatus(ctx context.Context) ([]PublisherStatus, error)
}

// Assignment is one entry of GET /ingest/assigned.
type Assignment struct {
	Publisher peer.ID
	// Continued is the frozen node this assignment took over by a
	// handoff; empty (and omitted on the wire) otherwise.
	Continued peer.ID `json:",omitempty"`
}

// HandoffRequest is the body of POST /ingest/handoff/{id}:
// {"FrozenID":"12D3…","FrozenURL":"http://…"}.
type HandoffRequest struct {
	// FrozenID is the peer ID of the frozen node.
	FrozenID peer.ID
	// FrozenURL is the base URL of the frozen node's find API; the
	// receiver reads GET {FrozenURL}/providers.
	FrozenURL string
}

// Status is the body of GET /status: {"Frozen":false,"ID":"12D3…","Usage":42.5}.
type Status struct {
	Frozen bool
	ID     peer.ID
	// Usage is the disk usage of the fullest monitored filesystem in
	// percent, −1 when unknown.
	Usage float64
}

// SyncRequest is what POST /ingest/sync/{id}?depth=&resync= asks for.
type SyncRequest struct {
	// Addr is the publisher address to sync from (the optional body, a
	// JSON string); empty for the address the node already knows.
	Addr multiaddr.Multiaddr
	// Depth limits the number of advertisements walked: 0 for the node's
	// configured limit, −1 for no limit.
	Depth int
	// Resync walks the chain again even past advertisements already
	// processed.
	Resync bool
}

// PublisherStatus is one entry of GET /ingest/status: the walk progress of
// one publisher. CIDs are dag-json links ({"/":"bafy…"}) or null.
type PublisherStatus struct {
	Publisher peer.ID
	// Addrs are the publisher's verified addresses: those its signed head
	// was last fetched from (an announce of others that do not verify
	// changes nothing).
	Addrs []multiaddr.Multiaddr `json:",omitempty"`
	// Announced is the newest head announced and not yet taken by a walk.
	Announced cid.Cid
	// Head is the head of the walk in progress, LastHead that of the last
	// walk that finished.
	Head     cid.Cid
	LastHead cid.Cid
	// Pending counts advertisements collected by the walk in progress and
	// not yet applied.
	Pending int
	Walking bool
	// AdsWalked, AdsApplied and EntriesIndexed are running totals.
	AdsWalked      uint64
	AdsApplied     uint64
	EntriesIndexed uint64
	// Failures counts consecutive failed walks; RetryAt is when the next
	// may start.
	Failures int
	RetryAt  time.Time `json:",omitzero"`
	// LastError is the text of the last failed walk's error.
	LastError     string    `json:",omitempty"`
	LastErrorTime time.Time `json:",omitzero"`
}
