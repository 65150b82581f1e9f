package lease

import (
	"errors"

	"github.com/indexkit/indexkit/internal/errkind"
)

// released is the type of ErrReleased: it matches ErrNotHeld as well.
type released struct{}

func (released) Error() string        { return "lease: released" }
func (released) Is(target error) bool { return target == ErrNotHeld }

var (
	// ErrNotFound is returned for an item the catalog does not hold.
	ErrNotFound = errors.New("lease: not found")

	// ErrNotHeld is returned by an owner operation (Renew, Release, Update)
	// whose lease has expired, was released, or names another holder.
	ErrNotHeld = errors.New("lease: not held")

	// ErrReleased is why a [Lease] ends when its holder gives it up
	// (Release, Drain, an eviction): [Lease.Err] and [HolderHooks].LeaseLost get
	// an error wrapping it. It also matches ErrNotHeld, so
	// errors.Is(err, ErrReleased) tells a voluntary end from a loss.
	ErrReleased error = released{}

	// ErrStaleFence is returned by an owner operation whose fence is older
	// than the item's newest grant: someone else has been granted the item
	// since.
	ErrStaleFence = errors.New("lease: stale fence")

	// ErrAuctionClosed is returned by a bid that arrives after the auction's
	// window has passed; the bid closes the auction (as [Store.Evaluate]
	// would) and is not placed.
	ErrAuctionClosed = errors.New("lease: auction closed")

	// ErrBidPending is returned by a bid from a node that already has an
	// unaccepted bid pending, on any item.
	ErrBidPending = errors.New("lease: bid pending")

	// ErrBidTooLow is returned by a bid whose free memory is below the
	// item's minimum bid.
	ErrBidTooLow = errors.New("lease: bid too low")

	// ErrLeased is returned by a bid on an item that is leased.
	ErrLeased = errors.New("lease: leased")

	// ErrVersionConflict is returned by an update whose IfVersion does not
	// match the row's version.
	ErrVersionConflict = errors.New("lease: version conflict")

	// ErrInvalid is wrapped by errors that reject an argument (an empty item
	// or node name, a negative size, a bad option).
	ErrInvalid = errors.New("lease: invalid argument")

	// ErrInvalidOption is wrapped by errors that reject an option, a
	// [Config] field or a constructor's argument ([NewConfig], the
	// backends' New, agent.NewManager). It also matches [ErrInvalid], and,
	// under errors.Is, the ErrInvalidOption of every other package of the
	// module.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "lease: invalid option", ErrInvalid)

	// ErrClosed is returned by every method of a store after Close.
	ErrClosed = errkind.New(errkind.Closed, "lease: closed")
)
