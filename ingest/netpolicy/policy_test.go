package netpolicy_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

func mustNew(t testing.TB, opts ...netpolicy.Option) *netpolicy.Policy {
	t.Helper()
	p, err := netpolicy.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mapped returns the IPv4-mapped IPv6 form of an IPv4 address.
func mapped(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

// nat64 returns the 64:ff9b::/96 form of an IPv4 address.
func nat64(a netip.Addr) netip.Addr {
	b := netip.MustParseAddr("64:ff9b::").As16()
	v4 := a.As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}

// The ranges, each with what the default policy, AllowPrivate and
// AllowPrivate+AllowCloudMetadata decide. IPv4 rows are checked in their
// IPv4-mapped and NAT64 forms too.
var rangeCases = []struct {
	addr  string
	want  netpolicy.Range
	byDef bool // allowed by the default policy
	byPri bool // allowed by AllowPrivate
	byMet bool // allowed by AllowPrivate + AllowCloudMetadata
}{
	{"8.8.8.8", netpolicy.RangePublic, true, true, true},
	{"198.51.100.7", netpolicy.RangePublic, true, true, true},
	{"2606:4700::1111", netpolicy.RangePublic, true, true, true},
	{"100.63.255.255", netpolicy.RangePublic, true, true, true}, // just below CGNAT
	{"100.128.0.0", netpolicy.RangePublic, true, true, true},    // just above
	{"172.32.0.1", netpolicy.RangePublic, true, true, true},     // just above 172.16/12
	{"169.253.255.255", netpolicy.RangePublic, true, true, true},

	{"127.0.0.1", netpolicy.RangeLoopback, false, true, true},
	{"127.255.255.254", netpolicy.RangeLoopback, false, true, true},
	{"::1", netpolicy.RangeLoopback, false, true, true},

	{"10.0.0.5", netpolicy.RangePrivate, false, true, true},
	{"10.255.255.255", netpolicy.RangePrivate, false, true, true},
	{"172.16.0.1", netpolicy.RangePrivate, false, true, true},
	{"172.31.255.255", netpolicy.RangePrivate, false, true, true},
	{"192.168.1.1", netpolicy.RangePrivate, false, true, true},
	{"198.18.0.1", netpolicy.RangePrivate, false, true, true},
	{"fc00::1", netpolicy.RangePrivate, false, true, true},
	{"fd12:3456::1", netpolicy.RangePrivate, false, true, true},
	{"fec0::1", netpolicy.RangePrivate, false, true, true},
	{"64:ff9b:1::a", netpolicy.RangePrivate, false, true, true},

	{"169.254.0.1", netpolicy.RangeLinkLocal, false, true, true},
	{"169.254.169.253", netpolicy.RangeLinkLocal, false, true, true},
	{"fe80::1", netpolicy.RangeLinkLocal, false, true, true},
	{"fe80::1%eth0", netpolicy.RangeLinkLocal, false, true, true},
	{"febf::1", netpolicy.RangeLinkLocal, false, true, true},

	{"100.64.0.1", netpolicy.RangeCGNAT, false, true, true},
	{"100.127.255.255", netpolicy.RangeCGNAT, false, true, true},

	{"169.254.169.254", netpolicy.RangeMetadata, false, false, true},
	{"fd00:ec2::254", netpolicy.RangeMetadata, false, false, true},
	{"100.100.100.200", netpolicy.RangeMetadata, false, false, true},

	{"0.0.0.0", netpolicy.RangeUnspecified, false, false, false},
	{"0.1.2.3", netpolicy.RangeUnspecified, false, false, false},
	{"::", netpolicy.RangeUnspecified, false, false, false},

	{"224.0.0.1", netpolicy.RangeMulticast, false, false, false},
	{"239.255.255.250", netpolicy.RangeMulticast, false, false, false},
	{"ff02::1", netpolicy.RangeMulticast, false, false, false},
	{"ff05::1:3", netpolicy.RangeMulticast, false, false, false},

	{"255.255.255.255", netpolicy.RangeBroadcast, false, false, false},

	{"240.0.0.1", netpolicy.RangeReserved, false, false, false},
	{"192.0.0.8", netpolicy.RangeReserved, false, false, false},
	{"::7f00:1", netpolicy.RangeReserved, false, false, false}, // IPv4-compatible 127.0.0.1
	{"100::1", netpolicy.RangeReserved, false, false, false},
}

func TestCheckRanges(t *testing.T) {
	def := mustNew(t)
	pri := mustNew(t, netpolicy.AllowPrivate())
	met := mustNew(t, netpolicy.AllowPrivate(), netpolicy.AllowCloudMetadata())
	var nilPolicy *netpolicy.Policy
	check := func(t *testing.T, name string, p *netpolicy.Policy, a netip.Addr, want netpolicy.Range, allowed bool) {
		t.Helper()
		err := p.Check(a)
		if allowed {
			if err != nil {
				t.Errorf("%s.Check(%s) = %v, want allowed", name, a, err)
			}
			return
		}
		if !errors.Is(err, netpolicy.ErrForbiddenAddress) {
			t.Fatalf("%s.Check(%s) = %v, want ErrForbiddenAddress", name, a, err)
		}
		var ae *netpolicy.AddressError
		if !errors.As(err, &ae) || ae.Range != want || ae.Addr != a {
			t.Errorf("%s.Check(%s) = %#v, want an AddressError of %s in range %q", name, a, err, a, want)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "netpolicy: "+a.String()+": "+string(want)+" address not allowed (") {
			t.Errorf("%s.Check(%s) says %q: want it to name the address and the range", name, a, msg)
		}
	}
	for _, c := range rangeCases {
		t.Run(c.addr, func(t *testing.T) {
			a := netip.MustParseAddr(c.addr)
			forms := []netip.Addr{a}
			if a.Is4() {
				forms = append(forms, mapped(a), nat64(a))
			}
			for _, f := range forms {
				if got := netpolicy.Classify(f); got != c.want {
					t.Errorf("Classify(%s) = %q, want %q", f, got, c.want)
				}
				check(t, "default", def, f, c.want, c.byDef)
				check(t, "nil", nilPolicy, f, c.want, c.byDef)
				check(t, "AllowPrivate", pri, f, c.want, c.byPri)
				check(t, "AllowPrivate+AllowCloudMetadata", met, f, c.want, c.byMet)
			}
		})
	}
}

func TestCheckInvalid(t *testing.T) {
	p := mustNew(t, netpolicy.AllowPrivate(), netpolicy.AllowCloudMetadata(), netpolicy.AllowPrefixes(netip.MustParsePrefix("::/0")))
	if err := p.Check(netip.Addr{}); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Fatalf("Check(zero Addr) = %v, want ErrForbiddenAddress", err)
	}
}

func TestAllowCloudMetadataAlone(t *testing.T) {
	p := mustNew(t, netpolicy.AllowCloudMetadata())
	if err := p.Check(netip.MustParseAddr("169.254.169.254")); err != nil {
		t.Errorf("metadata address: %v, want allowed", err)
	}
	if err := p.Check(netip.MustParseAddr("169.254.0.1")); !errors.Is(err, netpolicy.ErrForbiddenAddress) {
		t.Errorf("another link-local address: %v, want refused (AllowCloudMetadata is not AllowPrivate)", err)
	}
}

func TestAllowPrefixes(t *testing.T) {
	p := mustNew(t, netpolicy.AllowPrefixes(
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("::ffff:192.168.7.0/120"), // a mapped prefix stands for 192.168.7.0/24
		netip.MustParsePrefix("fd00:ec2::254/128"),
		netip.MustParsePrefix("239.1.2.3/32"),
	))
	for _, c := range []struct {
		addr    string
		allowed bool
	}{
		{"10.1.2.3", true},
		{"::ffff:10.1.2.3", true},
		{"64:ff9b::a01:203", true}, // NAT64 10.1.2.3
		{"10.2.0.1", false},
		{"192.168.7.9", true},
		{"::ffff:192.168.7.9", true},
		{"192.168.8.1", false},
		{"fd00:ec2::254", true}, // an explicit prefix beats every range
		{"169.254.169.254", false},
		{"239.1.2.3", true},
		{"127.0.0.1", false},
		{"8.8.8.8", true},
	} {
		err := p.Check(netip.MustParseAddr(c.addr))
		if c.allowed != (err == nil) {
			t.Errorf("Check(%s) = %v, want allowed %v", c.addr, err, c.allowed)
		}
	}
	if _, err := netpolicy.New(netpolicy.AllowPrefixes(netip.Prefix{})); !errors.Is(err, netpolicy.ErrInvalidOption) {
		t.Errorf("AllowPrefixes(invalid prefix): %v, want ErrInvalidOption", err)
	}
}

func TestString(t *testing.T) {
	var nilPolicy *netpolicy.Policy
	for _, c := range []struct {
		p    *netpolicy.Policy
		want string
	}{
		{nilPolicy, "public addresses only"},
		{mustNew(t), "public addresses only"},
		{mustNew(t, netpolicy.AllowPrivate()), "public addresses and private"},
		{mustNew(t, netpolicy.AllowPrivate(), netpolicy.AllowCloudMetadata(), netpolicy.AllowPrefixes(netip.MustParsePrefix("10.1.2.0/24"))),
			"public addresses and private, cloud metadata, 10.1.2.0/24"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
