package ingest

import (
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrFetch is wrapped when a [Syncer] fails to return the head or a
	// block: a network error, a timeout (context.DeadlineExceeded is
	// wrapped too), a missing block.
	ErrFetch = errors.New("ingest: fetch failed")

	// ErrInvalidBlock is wrapped when a block fetched from a publisher
	// fails verification or decoding (its bytes do not hash to its CID,
	// it is too large, not dag-json or dag-cbor, malformed, or breaks a
	// rule of IPNI), or an advertisement lists an address that is not a
	// multiaddr. The ingest/schema sentinel is wrapped as well.
	ErrInvalidBlock = errors.New("ingest: invalid block")

	// ErrSignature is wrapped when an advertisement is unsigned, wrongly
	// signed, or signed by a peer that is neither its provider nor the
	// publisher it came from. The ingest/schema sentinel
	// (schema.ErrNoSignature or schema.ErrInvalidSignature) is wrapped as
	// well, except for a wrong signer.
	ErrSignature = errors.New("ingest: signature rejected")

	// ErrUnsupportedEntries is wrapped when an advertisement's Entries
	// link a block that decodes (as dag-json or dag-cbor) but is neither
	// an entry chunk nor the root of an IPLD HAMT.
	ErrUnsupportedEntries = errors.New("ingest: unsupported entries")

	// ErrDepthLimit is wrapped when a walk collects more advertisements
	// than the advertisement depth limit, or an entry chain (or a HAMT)
	// has more blocks than the entries depth limit (see [WithDepthLimits]).
	ErrDepthLimit = errors.New("ingest: depth limit reached")

	// ErrCycle is wrapped when a walk meets the same advertisement CID
	// twice.
	ErrCycle = errors.New("ingest: advertisement chain has a cycle")

	// ErrSpillLimit is wrapped when the advertisements a walk has
	// collected and not applied yet would take more bytes than the spill
	// limit ([WithSpillLimits]): the walk is abandoned, nothing of it kept.
	ErrSpillLimit = errors.New("ingest: spill limit reached")

	// ErrTooSlow is wrapped when a publisher sends its blocks slower than
	// the minimum transfer rate ([WithMinTransferRate]): the walk stops
	// where it is (persisted) and the publisher backs off.
	ErrTooSlow = errors.New("ingest: publisher too slow")

	// ErrUnverified is wrapped when a publisher's signed head could not be
	// fetched and verified from the addresses announced (or, when none were,
	// from those verified before): the announce is ignored, nothing is
	// written, the stored addresses stay.
	ErrUnverified = errors.New("ingest: publisher head not verified")

	// ErrTooManyPublishers is returned by [Ingester.Announce] for a new
	// publisher while the most publishers that never verified are pending
	// ([WithUnverifiedLimit]).
	ErrTooManyPublishers = errors.New("ingest: too many unverified publishers")

	// ErrNotAllowed is returned for a publisher that the [Policy] denies.
	ErrNotAllowed = errors.New("ingest: publisher not allowed")

	// ErrPositionMoved is wrapped by [Positions].Move when the persisted
	// position is no longer the one the move starts from: another walk
	// (of another process) moved it.
	ErrPositionMoved = errors.New("ingest: walk position moved by another walk")
	// ErrWalkedElsewhere is wrapped by [Positions] when another process
	// walks the publisher now. It is not a failure: the [Ingester]
	// neither backs off nor records an error, and asks again after one
	// slot time ([WithSlot]).
	ErrWalkedElsewhere = errors.New("ingest: publisher walked by another process")
	// ErrInvalidOption is wrapped by constructors given an option they
	// cannot honour; the message names it.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "ingest: invalid option")
)

// AdError is the error of one advertisement that could not be applied.
// The walk stalls at it: the advertisements before it stay applied, and the
// next walk of the publisher starts again with it. Errors.Is sees the
// wrapped cause ([ErrFetch], [ErrInvalidBlock], [ErrSignature], a store
// error, ...).
type AdError struct {
	Ad       cid.Cid // the advertisement
	Provider peer.ID // its provider, when the advertisement decoded
	Err      error
}

func (e *AdError) Error() string {
	if e.Provider != "" {
		return fmt.Sprintf("ingest: advertisement %s of provider %s: %v", e.Ad, e.Provider, e.Err)
	}
	return fmt.Sprintf("ingest: advertisement %s: %v", e.Ad, e.Err)
}

func (e *AdError) Unwrap() error { return e.Err }
