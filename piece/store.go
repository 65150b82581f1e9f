package piece

import (
	"context"
	"errors"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
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
	ErrClosed = errors.New("piece: store closed")
)
