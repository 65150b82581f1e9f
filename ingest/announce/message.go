package announce

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// Limits of a [Message], the same as go-libipni's cbor-gen codec enforces.
// Both encoders refuse, and both decoders reject, a message beyond them.
const (
	// MaxAddrs is the most addresses a message may carry.
	MaxAddrs = 8192
	// MaxFieldLen is the longest binary address or ExtraData, in bytes.
	MaxFieldLen = 2 << 20
	// MaxCIDLen is the longest CID, in bytes.
	MaxCIDLen = 511
	// MaxOrigPeerLen is the longest OrigPeer string, in bytes.
	MaxOrigPeerLen = 8192
)

// Message is an announce: "the advertisement Cid is the head of my chain,
// fetch it from Addrs". Its wire forms are the CBOR tuple of [DecodeCBOR]
// and the JSON object of [DecodeJSON].
type Message struct {
	// Cid is the announced advertisement, normally the new head.
	Cid cid.Cid
	// Addrs are where the publisher serves the chain. Over HTTP each ends
	// with /p2p/<publisher>; in gossip they may lack it.
	Addrs []multiaddr.Multiaddr
	// ExtraData is opaque data for some receivers, for example a storage
	// provider ID for a gateway. Nil and empty are the same on the CBOR wire.
	ExtraData []byte
	// OrigPeer is set only in an announce that an indexer received over
	// HTTP and republished on gossip: it is the publisher, whereas the
	// gossip message's signer is the republishing indexer.
	OrigPeer peer.ID
}

// PublisherAddrInfo returns the publisher named by the /p2p/ part of the
// message's addresses, with those addresses stripped of it, which is how an
// HTTP announce names its publisher. Every address must end in /p2p/ with the
// same peer ID; an address that is only /p2p/<id> adds no transport address.
// It fails with [ErrNoPublisher] when there are no addresses or one lacks
// /p2p/, and with [ErrManyPublishers] when they name different peers.
// OrigPeer is not consulted.
func (m Message) PublisherAddrInfo() (peer.AddrInfo, error) {
	if len(m.Addrs) == 0 {
		return peer.AddrInfo{}, fmt.Errorf("%w: no addresses", ErrNoPublisher)
	}
	var ai peer.AddrInfo
	for _, a := range m.Addrs {
		transport, id := peer.SplitAddr(a)
		if id == "" {
			return peer.AddrInfo{}, fmt.Errorf("%w: address %s has no /p2p/ part", ErrNoPublisher, a)
		}
		if ai.ID == "" {
			ai.ID = id
		} else if id != ai.ID {
			return peer.AddrInfo{}, fmt.Errorf("%w: %s and %s", ErrManyPublishers, ai.ID, id)
		}
		if len(transport) > 0 {
			ai.Addrs = append(ai.Addrs, transport)
		}
	}
	return ai, nil
}

// Publisher returns the peer ID of [Message.PublisherAddrInfo].
func (m Message) Publisher() (peer.ID, error) {
	ai, err := m.PublisherAddrInfo()
	return ai.ID, err
}

// Equal reports whether m and o are the same message; nil and empty
// ExtraData are equal.
func (m Message) Equal(o Message) bool {
	if !m.Cid.Equals(o.Cid) || m.OrigPeer != o.OrigPeer || !bytes.Equal(m.ExtraData, o.ExtraData) ||
		len(m.Addrs) != len(o.Addrs) {
		return false
	}
	for i, a := range m.Addrs {
		if !a.Equal(o.Addrs[i]) {
			return false
		}
	}
	return true
}

// validate checks what both encoders need.
func (m Message) validate() error {
	if !m.Cid.Defined() {
		return invalid("undefined CID")
	}
	if n := m.Cid.ByteLen(); n > MaxCIDLen {
		return invalid("CID of %d bytes, over %d", n, MaxCIDLen)
	}
	if len(m.Addrs) > MaxAddrs {
		return invalid("%d addresses, over %d", len(m.Addrs), MaxAddrs)
	}
	for i, a := range m.Addrs {
		if len(a) == 0 {
			return invalid("address %d is empty", i)
		}
		if n := len(a.Bytes()); n > MaxFieldLen {
			return invalid("address %d of %d bytes, over %d", i, n, MaxFieldLen)
		}
	}
	if len(m.ExtraData) > MaxFieldLen {
		return invalid("ExtraData of %d bytes, over %d", len(m.ExtraData), MaxFieldLen)
	}
	if m.OrigPeer != "" {
		if err := m.OrigPeer.Validate(); err != nil {
			return invalid("OrigPeer: %v", err)
		}
		if n := len(m.OrigPeer.String()); n > MaxOrigPeerLen {
			return invalid("OrigPeer of %d bytes, over %d", n, MaxOrigPeerLen)
		}
	}
	return nil
}

// parseAddrs turns the binary addresses of a decoded message into
// multiaddrs. An address that uses a protocol this build of go-multiaddr does
// not know is dropped, as go-libipni's GetAddrs drops it, so that a newer
// publisher's transports do not make the whole announce fail; any other bad
// address is an error.
func parseAddrs(raw [][]byte) ([]multiaddr.Multiaddr, error) {
	if raw == nil {
		return nil, nil
	}
	addrs := make([]multiaddr.Multiaddr, 0, len(raw))
	for i, b := range raw {
		if len(b) > MaxFieldLen {
			return nil, malformed("address %d of %d bytes, over %d", i, len(b), MaxFieldLen)
		}
		if len(b) == 0 {
			return nil, malformed("address %d is empty", i)
		}
		a, err := multiaddr.NewMultiaddrBytes(b)
		if err != nil {
			if hasUnknownProtocol(b) {
				continue
			}
			return nil, malformed("address %d (%x): %v", i, b, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// hasUnknownProtocol reports whether walking the binary multiaddr b reaches
// a protocol code that go-multiaddr does not know before it finds anything
// else wrong.
func hasUnknownProtocol(b []byte) bool {
	for len(b) > 0 {
		code, n := binary.Uvarint(b)
		if n <= 0 || code > 1<<31 {
			return false
		}
		b = b[n:]
		p := multiaddr.ProtocolWithCode(int(code))
		if p.Code == 0 {
			return true
		}
		size := uint64(0)
		switch {
		case p.Size > 0:
			size = uint64(p.Size) / 8
		case p.Size == multiaddr.LengthPrefixedVarSize:
			size, n = binary.Uvarint(b)
			if n <= 0 {
				return false
			}
			b = b[n:]
		}
		if size > uint64(len(b)) {
			return false
		}
		b = b[size:]
	}
	return false
}
