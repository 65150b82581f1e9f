package netpolicy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Range is the kind of address [Classify] finds an IP address to be.
type Range string

// The ranges. Only [RangePublic] is dialled by the default policy;
// [AllowPrivate] adds loopback, private, link-local and CGNAT addresses;
// [AllowCloudMetadata] adds the metadata addresses; the others are
// dialled only when an [AllowPrefixes] prefix holds them.
const (
	RangePublic      Range = "public"
	RangeLoopback    Range = "loopback"       // 127.0.0.0/8, ::1
	RangePrivate     Range = "private"        // RFC 1918, fc00::/7, fec0::/10, 198.18.0.0/15, 64:ff9b:1::/48
	RangeLinkLocal   Range = "link-local"     // 169.254.0.0/16, fe80::/10
	RangeCGNAT       Range = "CGNAT"          // 100.64.0.0/10 (RFC 6598 shared address space)
	RangeMetadata    Range = "cloud metadata" // 169.254.169.254, fd00:ec2::254, 100.100.100.200
	RangeUnspecified Range = "unspecified"    // 0.0.0.0/8, :: (dialled as this host)
	RangeMulticast   Range = "multicast"      // 224.0.0.0/4, ff00::/8
	RangeBroadcast   Range = "broadcast"      // 255.255.255.255
	RangeReserved    Range = "reserved"       // 240.0.0.0/4, 192.0.0.0/24, ::/96, 100::/64
	RangeInvalid     Range = "invalid"        // the zero netip.Addr
)

// hint says how a policy could allow an address of the range.
func (r Range) hint() string {
	switch r {
	case RangeLoopback, RangePrivate, RangeLinkLocal, RangeCGNAT:
		return "allow private addresses for a private pool"
	case RangeMetadata:
		return "refused even for a private pool; allow cloud metadata explicitly only if this is really wanted"
	case RangeInvalid:
		return "not an IP address"
	}
	return "not a unicast host address; allow its prefix explicitly only if this is really wanted"
}

var (
	metadataAddrs = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
		netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	}
	broadcast   = netip.MustParseAddr("255.255.255.255")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	nat64       = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the IPv4 address is the last 32 bits
	// private are the private prefixes besides netip.Addr.IsPrivate's
	// (RFC 1918, fc00::/7).
	private = []netip.Prefix{
		netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
		netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking, used as private space
		netip.MustParsePrefix("64:ff9b:1::/48"), // RFC 8215 local-use NAT64
	}
	reserved = []netip.Prefix{
		netip.MustParsePrefix("240.0.0.0/4"),  // future use (broadcast classified before)
		netip.MustParsePrefix("192.0.0.0/24"), // IETF protocol assignments
		netip.MustParsePrefix("::/96"),        // deprecated IPv4-compatible (:: and ::1 classified before)
		netip.MustParsePrefix("100::/64"),     // discard-only
	}
)

// effective is the address a dial of a reaches: without zone, IPv4-mapped
// addresses unmapped, NAT64 (64:ff9b::/96) addresses as the IPv4 address
// they embed.
func effective(a netip.Addr) netip.Addr {
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// Classify returns the range of a, looking through IPv4-mapped
// (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms and ignoring a
// zone. It does not depend on a policy.
func Classify(a netip.Addr) Range {
	if !a.IsValid() {
		return RangeInvalid
	}
	a = effective(a)
	inAny := func(ps []netip.Prefix) bool {
		for _, p := range ps {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	switch {
	case metadataAddrs[a]:
		return RangeMetadata
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return RangeUnspecified
	case a == broadcast:
		return RangeBroadcast
	case a.IsMulticast():
		return RangeMulticast
	case a.IsLoopback():
		return RangeLoopback
	case a.IsLinkLocalUnicast():
		return RangeLinkLocal
	case cgnat.Contains(a):
		return RangeCGNAT
	case a.IsPrivate() || inAny(private):
		return RangePrivate
	case inAny(reserved):
		return RangeReserved
	}
	return RangePublic
}

// Policy decides which IP addresses outbound connections may reach. Its
// zero value and a nil *Policy are the default policy: public addresses
// only. Build others with [New]. A Policy is immutable and safe for
// concurrent use.
type Policy struct {
	private  bool
	metadata bool
	allow    []netip.Prefix
}

// Option configures a [Policy] ([New]).
type Option func(*config) error

// config is what the options of [New] set.
type config struct {
	private  bool
	metadata bool
	allow    []netip.Prefix
}

// New returns a policy that allows public addresses and what opts add:
// [AllowPrivate], [AllowCloudMetadata], [AllowPrefixes]. New() is the
// default policy.
func New(opts ...Option) (*Policy, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &Policy{private: c.private, metadata: c.metadata, allow: c.allow}, nil
}

// AllowPrivate allows loopback, private (RFC 1918, fc00::/7), link-local
// and CGNAT addresses: for a pool whose publishers and indexers sit on a
// private network or on one machine. Cloud metadata addresses stay
// refused ([AllowCloudMetadata]).
func AllowPrivate() Option {
	return func(c *config) error { c.private = true; return nil }
}

// AllowCloudMetadata allows the cloud metadata addresses (169.254.169.254,
// fd00:ec2::254, 100.100.100.200), which no other option allows but an
// [AllowPrefixes] prefix. They serve the credentials of the machine the
// node runs on: allow them only to reach a publisher that truly lives
// there.
func AllowCloudMetadata() Option {
	return func(c *config) error { c.metadata = true; return nil }
}

// AllowPrefixes allows every address in the given prefixes, whatever its
// range (multicast and metadata addresses included: the prefix is
// explicit). An IPv4-mapped prefix (::ffff:10.0.0.0/104) stands for its
// IPv4 form. Prefixes add up over calls.
func AllowPrefixes(prefixes ...netip.Prefix) Option {
	return func(c *config) error {
		for _, pf := range prefixes {
			if !pf.IsValid() {
				return fmt.Errorf("%w: AllowPrefixes: invalid prefix %q", ErrInvalidOption, pf)
			}
			if pf.Addr().Is4In6() && pf.Bits() >= 96 {
				pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
			}
			c.allow = append(c.allow, pf.Masked())
		}
		return nil
	}
}

// Check returns nil if the policy allows a connection to a, and otherwise
// an [*AddressError] (matching [ErrForbiddenAddress]) that names a and its
// range. IPv4-mapped and NAT64 forms are judged as the IPv4 address they
// stand for.
func (p *Policy) Check(a netip.Addr) error {
	r := Classify(a)
	if p.allows(a, r) {
		return nil
	}
	return &AddressError{Addr: a, Range: r}
}

func (p *Policy) allows(a netip.Addr, r Range) bool {
	switch r {
	case RangePublic:
		return true
	case RangeInvalid:
		return false
	}
	if p == nil {
		return false
	}
	plain, eff := a.WithZone("").Unmap(), effective(a)
	for _, pf := range p.allow {
		if pf.Contains(plain) || pf.Contains(eff) {
			return true
		}
	}
	switch r {
	case RangeLoopback, RangePrivate, RangeLinkLocal, RangeCGNAT:
		return p.private
	case RangeMetadata:
		return p.metadata
	}
	return false
}

// String describes the policy for logs: "public addresses only", or what
// it allows besides.
func (p *Policy) String() string {
	if p == nil || !p.private && !p.metadata && len(p.allow) == 0 {
		return "public addresses only"
	}
	var parts []string
	if p.private {
		parts = append(parts, "private")
	}
	if p.metadata {
		parts = append(parts, "cloud metadata")
	}
	for _, pf := range p.allow {
		parts = append(parts, pf.String())
	}
	return "public addresses and " + strings.Join(parts, ", ")
}

// control is a net.Dialer ControlContext: it runs after name resolution,
// before each connection attempt, on the address actually dialled.
func (p *Policy) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s address %q is not an IP address and port", ErrForbiddenAddress, network, address)
	}
	return p.Check(ap.Addr())
}

// Dialer returns a net.Dialer (with the timeouts of net/http's default
// transport: 30 s to connect, 30 s keep-alive) that checks every address
// it is about to connect to, after name resolution, and refuses the
// connection before it is made when the policy does not allow the
// address. A name that resolves to several addresses is dialled on those
// allowed; a rebinding DNS server cannot slip an address past the check,
// which sees the address the socket connects to. Only IP networks (tcp,
// udp and their 4 and 6 forms) can be dialled.
func (p *Policy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: p.control}
}

// DialContext dials address on network through [Policy.Dialer]. A refusal
// wraps an [*AddressError].
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return p.Dialer().DialContext(ctx, network, address)
}

// Transport returns a new HTTP transport that dials through
// [Policy.Dialer]: a clone of net/http's default transport (HTTP/2, idle
// connection limits, TLS handshake timeout) without a proxy (a proxy
// would connect on the client's behalf, out of the policy's sight; the
// environment's HTTP_PROXY is ignored) and with DisableCompression set
// (ipnisync asks for gzip itself and decodes it under its own limit).
// The caller closes its idle connections when done.
func (p *Policy) Transport() *http.Transport {
	var tr *http.Transport
	if def, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = def.Clone()
	} else {
		tr = &http.Transport{ForceAttemptHTTP2: true, MaxIdleConns: 100, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	tr.Proxy = nil
	tr.DialContext = p.DialContext
	tr.DialTLSContext = nil
	tr.DisableCompression = true
	return tr
}

// Client returns a new HTTP client over [Policy.Transport] that follows
// no redirect ([RefuseRedirect]): a publisher cannot send the client to
// another address, allowed or not. It has no overall timeout; bound each
// request with its context.
func (p *Policy) Client() *http.Client {
	return &http.Client{Transport: p.Transport(), CheckRedirect: RefuseRedirect}
}

// RefuseRedirect is an http.Client CheckRedirect that refuses every
// redirect with [ErrRedirect]: the request fails (url.Error wrapping
// ErrRedirect) and the redirect's target is not contacted.
func RefuseRedirect(req *http.Request, _ []*http.Request) error {
	if req.Response != nil {
		return fmt.Errorf("%w: answered %d", ErrRedirect, req.Response.StatusCode)
	}
	return ErrRedirect
}
