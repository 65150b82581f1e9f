// Package netpolicy decides which IP addresses a node's outbound clients
// may connect to, so that a stranger who names an address (in an announce,
// a provider record, a handoff's FrozenURL) cannot make the node fetch from
// its own machine, its private network or its cloud's metadata service.
//
// # Model
//
// Every IP address falls in one [Range] ([Classify]): public, loopback,
// private, link-local, CGNAT, cloud metadata, unspecified, multicast,
// broadcast, reserved. IPv4-mapped addresses (::ffff:10.0.0.5) and NAT64
// addresses (64:ff9b::a00:5) are judged as the IPv4 address they stand
// for, and a zone (fe80::1%eth0) is ignored.
//
// A [Policy] allows some ranges. The default (New(), the zero value, a
// nil *Policy) allows public addresses only. Options widen it:
//
//	AllowPrivate()        loopback, private, link-local, CGNAT: a pool on a
//	                      private network or on one machine
//	AllowCloudMetadata()  169.254.169.254, fd00:ec2::254, 100.100.100.200,
//	                      which AllowPrivate does not allow
//	AllowPrefixes(p...)   any address in p, whatever its range
//
// # Where the check runs
//
// [Policy.Check] judges one address. The dialers check at connect time:
// [Policy.Dialer] (and [Policy.DialContext], [Policy.Transport],
// [Policy.Client], built on it) sets net.Dialer's ControlContext, which
// runs after name resolution on the very address the socket is about to
// connect to. Checking a URL's host before the request would not do: a
// name can resolve to a public address when checked and to 127.0.0.1 when
// dialled (DNS rebinding), and http.Transport resolves names itself.
//
// A redirect would send a client to an address its caller never saw, so
// [Policy.Client] follows none ([RefuseRedirect], [ErrRedirect]); the
// transport uses no proxy, which would connect out of the policy's sight.
//
// libp2p dials do not go through a net.Dialer: package ingest/ipnisync
// builds a libp2p connection gater from a Policy for a node's host.
//
// # Concurrency and lifecycle
//
// A Policy is immutable and safe for concurrent use. It starts nothing.
// Each call of [Policy.Transport] or [Policy.Client] returns a new
// transport, whose idle connections its owner closes.
//
// # Errors
//
// A refused address is an [*AddressError] naming the address, its range
// and how a policy could allow it ("netpolicy: 10.0.0.5: private address
// not allowed (allow private addresses for a private pool)"); it matches
// [ErrForbiddenAddress] under errors.Is, also through the net.OpError and
// url.Error that wrap it in a dial or a request. A refused redirect wraps
// [ErrRedirect]; a bad option, [ErrInvalidOption].
package netpolicy
