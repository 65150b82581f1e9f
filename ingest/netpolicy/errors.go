package netpolicy

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/indexkit/indexkit/internal/errkind"
)

var (
	// ErrForbiddenAddress is matched (errors.Is) by every refusal of an
	// address: [Policy.Check], and the dials of [Policy.DialContext],
	// [Policy.Transport] and [Policy.Client], whose errors wrap an
	// [*AddressError] naming the address and its range.
	ErrForbiddenAddress = errors.New("netpolicy: address not allowed")

	// ErrRedirect is wrapped by a request of [Policy.Client] (or of any
	// client whose CheckRedirect is [RefuseRedirect]) answered with a
	// redirect: the redirect is not followed, whoever it points to.
	ErrRedirect = errors.New("netpolicy: redirect not followed")

	// ErrInvalidOption is wrapped by [New] given an option it cannot
	// honour; the message names it.
	ErrInvalidOption = errkind.New(errkind.InvalidOption, "netpolicy: invalid option")
)

// AddressError is the refusal of one address. It matches
// [ErrForbiddenAddress] under errors.Is; errors.As gives the address and
// the range it fell in, for logs and metrics.
type AddressError struct {
	Addr  netip.Addr // the address refused, as dialled
	Range Range      // the range it fell in
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("netpolicy: %s: %s address not allowed (%s)", e.Addr, e.Range, e.Range.hint())
}

// Is reports whether target is [ErrForbiddenAddress].
func (e *AddressError) Is(target error) bool { return target == ErrForbiddenAddress }
