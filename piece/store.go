package piece

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/errkind"
)

// DefaultCapacity is the default number of payload CIDs a store keeps per
// (provider, piece): the k of the bottom-k sample.
const DefaultCapacity = 16

// Store keeps, per provider, a bounded sample (reservoir) of payload CIDs for
// each piece, and the provider's ingestion status.
//
// Implementations must be safe for concurrent use. The backends are
// piece/memory and piece/redis; both pass the conformance suite in
// piece/piecetest.
type Store interface {
	// AddPayloads offers payload CIDs seen in piece of provider. The store
	// keeps, per (provider, piece), the k payloads with the smallest 64-bit
	// hash of (provider, piece, payload) — a bottom-k sample: uniform,
	// deterministic, independent of offer order, and idempotent (offering a
	// payload twice, e.g. when an ad is re-applied after a crash, changes
	// nothing). k is the store's capacity (default 16, an option of each
	// backend). It also makes the provider known and the piece counted
	// (distinct pieces per provider, idempotent).
	//
	// The hash is [PayloadHash]; backends that cannot store 64 bits exactly
	// may order by a documented prefix of it, as long as the order is total
	// and the same for every backend.
	AddPayloads(ctx context.Context, provider peer.ID, piece cid.Cid, payloads ...cid.Cid) error
	// Payloads returns the kept payloads of (provider, piece), in ascending
	// hash order. Errors wrap ErrProviderNotFound or ErrPieceNotFound.
	Payloads(ctx context.Context, provider peer.ID, piece cid.Cid) ([]cid.Cid, error)
	// UpdateStatus applies u to the provider's status (creating the provider
	// if unknown).
	UpdateStatus(ctx context.Context, provider peer.ID, u StatusUpdate) error
	// Status returns the provider's status with its counters; pieces are
	// counted by the store, no scans. The error wraps ErrProviderNotFound.
	Status(ctx context.Context, provider peer.ID) (Status, error)
	// Close releases the store. It is idempotent; other methods return
	// ErrClosed after it.
	Close() error
}

// Counters are the per-provider walk counters kept by a [Store].
type Counters struct {
	AdsWalked            int64 // ads processed (applied or skipped)
	AdsWithoutPiece      int64 // ads with entries but no PieceCID in metadata or ContextID
	EntriesUnretrievable int64 // ads whose entries could not be fetched
}

// StatusUpdate is a change to a provider's [Status], applied atomically by
// [Store.UpdateStatus]. Nil pointer fields leave the status unchanged.
type StatusUpdate struct {
	Add       Counters // added to the counters
	Address   *string  // publisher address (URL) the provider is walked from; nil leaves it
	Text      *string  // human status text ("walking", "up to date", "unsupported protocol: …"); nil leaves it
	LastError *string  // last error, "" clears; nil leaves it
	LastHead  *cid.Cid // head of the last completed walk; nil leaves it
	Head      *cid.Cid // head of the walk in progress (cid.Undef when none); nil leaves it
}

// Status is a provider's ingestion status as kept by a [Store].
type Status struct {
	Provider                 peer.ID
	Address, Text, LastError string
	LastHead, Head           cid.Cid
	Counters
	PiecesIndexed int64     // distinct pieces with at least one payload
	Updated       time.Time // time of the last change (AddPayloads or UpdateStatus)
}

var (
	// ErrProviderNotFound is returned (wrapped) when a store has never seen
	// the provider.
	ErrProviderNotFound = errors.New("piece: provider not found")
	// ErrPieceNotFound is returned (wrapped) when the provider is known but
	// has no payloads for the piece.
	ErrPieceNotFound = errors.New("piece: piece not found")
	// ErrClosed is returned (wrapped) by a store's methods after Close.
	ErrClosed = errkind.New(errkind.Closed, "piece: store closed")
)

// WalkPosition is where a publisher's chain walk stands, as the
// piece-indexer design keeps it: LastHead is the head of the last finished
// walk (it and everything before it are walked), Head the head the walk in
// progress started from, Tail the next advertisement it fetches, and
// Walked the advertisements it has applied so far. The zero value is a
// publisher never walked.
type WalkPosition struct {
	LastHead, Head, Tail cid.Cid
	Walked               int64
}

// WalkStep is one move of a publisher's walk position from From to To,
// with the counters of the advertisement the move walks past: Add is added
// to the counters of Provider (none when Provider is empty, as when a walk
// starts).
type WalkStep struct {
	From, To WalkPosition
	Provider peer.ID
	Add      Counters
}

// Walks is an optional capability of a [Store], found by type assertion:
// the store keeps each publisher's walk position, so that a [Tracker]
// moves the position and adds an advertisement's counters in one
// transaction (counters exact however a process stops), and several
// Trackers pointed at one store share the walks: a walk is claimed by one
// owner at a time, for a time to live renewed by each step, and every step
// is conditioned on the position it starts from. Both backends have it.
type Walks interface {
	// ClaimWalk returns publisher's position and claims its walk for owner
	// until ttl from now. It fails with an error wrapping ErrWalkClaimed,
	// and changes nothing, while another owner's claim lasts.
	ClaimWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration) (WalkPosition, error)
	// StepWalk applies step, atomically: if publisher's position is
	// step.From and no other owner's claim lasts, the position becomes
	// step.To, step.Add is added to step.Provider's counters and owner's
	// claim is renewed for ttl. Otherwise nothing changes and the error
	// wraps ErrWalkMoved (the position is not step.From) or
	// ErrWalkClaimed.
	StepWalk(ctx context.Context, publisher peer.ID, owner string, ttl time.Duration, step WalkStep) error
}

var (
	// ErrWalkMoved is returned (wrapped) by [Walks].StepWalk when the
	// publisher's position is not the one the step starts from.
	ErrWalkMoved = errors.New("piece: walk position moved")
	// ErrWalkClaimed is returned (wrapped) by [Walks] methods while
	// another owner's claim on the publisher's walk lasts.
	ErrWalkClaimed = errors.New("piece: walk claimed by another owner")
)

// CheckWalkArgs returns an error if the arguments of a [Walks] method are
// invalid (a publisher ID that does not validate, an empty owner, a TTL
// that is not positive); backends call it first.
func CheckWalkArgs(publisher peer.ID, owner string, ttl time.Duration) error {
	if err := publisher.Validate(); err != nil {
		return fmt.Errorf("invalid publisher ID: %w", err)
	}
	if owner == "" {
		return errors.New("empty owner")
	}
	if ttl <= 0 {
		return fmt.Errorf("claim TTL %v must be positive", ttl)
	}
	return nil
}
