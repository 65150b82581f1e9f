package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// rangeEdges holds, for every range the policy names, its first and last
// address and the addresses just outside it, so a prefix one bit too
// short or too long fails a row.
var rangeEdges = []struct {
	addr string
	want netpolicy.Range
}{
	{"0.255.255.255", netpolicy.RangeUnspecified},
	{"1.0.0.0", netpolicy.RangePublic},

	{"9.255.255.255", netpolicy.RangePublic},
	{"10.0.0.0", netpolicy.RangePrivate},
	{"10.255.255.255", netpolicy.RangePrivate},
	{"11.0.0.0", netpolicy.RangePublic},

	{"100.64.0.0", netpolicy.RangeCGNAT},
	{"100.127.255.255", netpolicy.RangeCGNAT},
	{"100.63.255.255", netpolicy.RangePublic},
	{"100.128.0.0", netpolicy.RangePublic},
	{"100.100.100.199", netpolicy.RangeCGNAT},
	{"100.100.100.201", netpolicy.RangeCGNAT},

	{"126.255.255.255", netpolicy.RangePublic},
	{"127.0.0.0", netpolicy.RangeLoopback},
	{"127.255.255.255", netpolicy.RangeLoopback},
	{"128.0.0.0", netpolicy.RangePublic},

	{"169.253.255.255", netpolicy.RangePublic},
	{"169.254.0.0", netpolicy.RangeLinkLocal},
	{"169.254.169.255", netpolicy.RangeLinkLocal},
	{"169.254.255.255", netpolicy.RangeLinkLocal},
	{"169.255.0.0", netpolicy.RangePublic},

	{"172.15.255.255", netpolicy.RangePublic},
	{"172.16.0.0", netpolicy.RangePrivate},
	{"172.31.255.255", netpolicy.RangePrivate},
	{"172.32.0.0", netpolicy.RangePublic},

	{"191.255.255.255", netpolicy.RangePublic},
	{"192.0.0.0", netpolicy.RangeReserved},
	{"192.0.0.255", netpolicy.RangeReserved},
	{"192.0.1.0", netpolicy.RangePublic},

	{"192.167.255.255", netpolicy.RangePublic},
	{"192.168.0.0", netpolicy.RangePrivate},
	{"192.168.255.255", netpolicy.RangePrivate},
	{"192.169.0.0", netpolicy.RangePublic},

	{"198.17.255.255", netpolicy.RangePublic},
	{"198.18.0.0", netpolicy.RangePrivate},
	{"198.19.255.255", netpolicy.RangePrivate},
	{"198.20.0.0", netpolicy.RangePublic},

	{"223.255.255.255", netpolicy.RangePublic},
	{"224.0.0.0", netpolicy.RangeMulticast},
	{"239.255.255.255", netpolicy.RangeMulticast},
	{"240.0.0.0", netpolicy.RangeReserved},
	{"255.255.255.254", netpolicy.RangeReserved},
	{"255.255.255.255", netpolicy.RangeBroadcast},

	{"::1", netpolicy.RangeLoopback},
	{"::1%lo", netpolicy.RangeLoopback},
	{"::2", netpolicy.RangeReserved},
	{"::ffff:ffff", netpolicy.RangeReserved}, // last of ::/96
	{"::1:0:0", netpolicy.RangePublic},       // first after ::/96 and before ::ffff:0:0/96

	{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePublic},
	{"fc00::", netpolicy.RangePrivate},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePrivate},
	{"fd00:ec2::253", netpolicy.RangePrivate},
	{"fd00:ec2::255", netpolicy.RangePrivate},
	{"fe00::", netpolicy.RangePublic},
	{"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePublic},
	{"fe80::", netpolicy.RangeLinkLocal},
	{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangeLinkLocal},
	{"fec0::", netpolicy.RangePrivate},
	{"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePrivate},
	{"ff00::", netpolicy.RangeMulticast},

	{"64:ff9b::a00:0", netpolicy.RangePrivate},   // NAT64 10.0.0.0
	{"64:ff9b::b00:0", netpolicy.RangePublic},    // NAT64 11.0.0.0
	{"64:ff9b::7f00:1", netpolicy.RangeLoopback}, // NAT64 127.0.0.1
	{"64:ff9b::1:0:0", netpolicy.RangePublic},    // past 64:ff9b::/96: embeds nothing
	{"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePublic},
	{"64:ff9b:1::", netpolicy.RangePrivate},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePrivate},
	{"64:ff9b:2::", netpolicy.RangePublic},

	{"ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", netpolicy.RangePublic},
	{"100::", netpolicy.RangeReserved},
	{"100::ffff:ffff:ffff:ffff", netpolicy.RangeReserved},
	{"100:0:0:1::", netpolicy.RangePublic},
}

// TestCheckRangeEdges checks Classify and the three usual policies at
// the edges of every range, IPv4 rows also in their IPv4-mapped and NAT64
// forms.
func TestCheckRangeEdges(t *testing.T) {
	def := mustNew(t)
	pri := mustNew(t, netpolicy.AllowPrivate())
	met := mustNew(t, netpolicy.AllowPrivate(), netpolicy.AllowCloudMetadata())
	for _, c := range rangeEdges {
		a := netip.MustParseAddr(c.addr)
		forms := []netip.Addr{a}
		if a.Is4() {
			forms = append(forms, mapped(a), nat64(a))
		}
		byPri := c.want == netpolicy.RangePublic || c.want == netpolicy.RangeLoopback || c.want == netpolicy.RangePrivate ||
			c.want == netpolicy.RangeLinkLocal || c.want == netpolicy.RangeCGNAT
		for _, f := range forms {
			if got := netpolicy.Classify(f); got != c.want {
				t.Errorf("Classify(%s) = %q, want %q", f, got, c.want)
			}
			for _, p := range []struct {
				name    string
				p       *netpolicy.Policy
				allowed bool
			}{
				{"default", def, c.want == netpolicy.RangePublic},
				{"AllowPrivate", pri, byPri},
				{"AllowPrivate+AllowCloudMetadata", met, byPri || c.want == netpolicy.RangeMetadata},
			} {
				if err := p.p.Check(f); (err == nil) != p.allowed {
					t.Errorf("%s.Check(%s) = %v, want allowed %v", p.name, f, err, p.allowed)
				}
			}
		}
	}
}

// TestAllowPrefixesEdges checks that an AllowPrefixes prefix allows its
// first and last address and nothing on either side, in every form.
func TestAllowPrefixesEdges(t *testing.T) {
	p := mustNew(t, netpolicy.AllowPrefixes(
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("::ffff:127.0.0.1/128"), // stands for 127.0.0.1/32
		netip.MustParsePrefix("fd00:1::/32"),
	))
	for _, c := range []struct {
		addr    string
		allowed bool
	}{
		{"10.0.255.255", false},
		{"10.1.0.0", true},
		{"10.1.255.255", true},
		{"10.2.0.0", false},
		{"::ffff:10.1.255.255", true},
		{"::ffff:10.2.0.0", false},
		{"64:ff9b::a01:0", true},
		{"64:ff9b::a02:0", false},
		{"127.0.0.0", false},
		{"127.0.0.1", true},
		{"127.0.0.2", false},
		{"::1", false},
		{"fd00:0:ffff:ffff:ffff:ffff:ffff:ffff", false},
		{"fd00:1::", true},
		{"fd00:1:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"fd00:2::", false},
	} {
		if err := p.Check(netip.MustParseAddr(c.addr)); (err == nil) != c.allowed {
			t.Errorf("Check(%s) = %v, want allowed %v", c.addr, err, c.allowed)
		}
	}
}
