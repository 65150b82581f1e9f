package ipnisync

import (
	"fmt"
	"net/netip"

	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/indexkit/indexkit/ingest/netpolicy"
)

// Gater is a libp2p connection gater that refuses outbound dials to the
// addresses a netpolicy.Policy does not allow: the libp2p side of
// [WithDialPolicy], for the host given to [WithLibp2p] (and to gossip).
// Give it to the host when it is built:
//
//	h, err := libp2p.New(..., libp2p.ConnectionGater(ipnisync.NewGater(policy)))
//
// The swarm resolves /dns and /dnsaddr addresses before it asks the
// gater, so the gater judges IP addresses; an address that still does not
// start with /ip4 or /ip6 (after an optional /ip6zone) is refused, since
// its transport would resolve or reach it out of the gater's sight.
// Inbound connections are not its business and are all accepted. A Gater
// is safe for concurrent use.
type Gater struct {
	policy *netpolicy.Policy
}

var _ connmgr.ConnectionGater = (*Gater)(nil)

// NewGater returns a gater of policy (nil: netpolicy's default, public
// addresses only).
func NewGater(policy *netpolicy.Policy) *Gater { return &Gater{policy: policy} }

// CheckAddr returns nil when the gater lets the host dial a, and
// otherwise why not (an error matching netpolicy.ErrForbiddenAddress).
func (g *Gater) CheckAddr(a ma.Multiaddr) error {
	var ip netip.Addr
	for i, c := range a {
		code := c.Protocol().Code
		if code == ma.P_IP6ZONE && i == 0 {
			continue
		}
		if code == ma.P_IP4 || code == ma.P_IP6 {
			var ok bool
			if ip, ok = netip.AddrFromSlice(c.RawValue()); !ok {
				ip = netip.Addr{}
			}
		}
		break
	}
	if !ip.IsValid() {
		return fmt.Errorf("%w: %s does not start with an IP address", netpolicy.ErrForbiddenAddress, a)
	}
	return g.policy.Check(ip)
}

// InterceptPeerDial allows every peer: the addresses decide.
func (g *Gater) InterceptPeerDial(peer.ID) bool { return true }

// InterceptAddrDial allows a dial of a when [Gater.CheckAddr] does.
func (g *Gater) InterceptAddrDial(_ peer.ID, a ma.Multiaddr) bool { return g.CheckAddr(a) == nil }

// InterceptAccept allows every inbound connection.
func (g *Gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured allows every connection.
func (g *Gater) InterceptSecured(network.Direction, peer.ID, network.ConnMultiaddrs) bool {
	return true
}

// InterceptUpgraded allows every connection.
func (g *Gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
