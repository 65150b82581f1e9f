package announce

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// jsonMessage is the JSON form go-libipni's Message gets from encoding/json:
// the CID as a dag-json link, addresses and ExtraData as standard padded
// base64 (null when nil), OrigPeer as a string, "" when unset.
type jsonMessage struct {
	Cid       *jsonLink
	Addrs     [][]byte
	ExtraData []byte
	OrigPeer  string
}

type jsonLink struct {
	Link string `json:"/"`
}

// EncodeJSON returns the JSON object of m as go-libipni emits it, e.g.
//
//	{"Cid":{"/":"bafy…"},"Addrs":["BH8AAAEGH5A="],"ExtraData":null,"OrigPeer":""}
//
// Addrs is null when nil and [] when empty; ExtraData is null when nil. It
// fails with [ErrInvalidMessage] as [Message.EncodeCBOR] does.
func (m Message) EncodeJSON() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	j := jsonMessage{Cid: &jsonLink{m.Cid.String()}, ExtraData: m.ExtraData}
	if m.Addrs != nil {
		j.Addrs = make([][]byte, len(m.Addrs))
		for i, a := range m.Addrs {
			j.Addrs[i] = a.Bytes()
		}
	}
	if m.OrigPeer != "" {
		j.OrigPeer = m.OrigPeer.String()
	}
	return json.Marshal(j)
}

// DecodeJSON decodes the JSON object of an announce. Field names match as
// encoding/json matches them (case-insensitively); unknown fields, a
// missing or null Cid and anything after the object are errors. Addresses
// are checked as in [DecodeCBOR]. Errors wrap [ErrMalformed]; no input
// panics.
func DecodeJSON(b []byte) (Message, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var j jsonMessage
	if err := d.Decode(&j); err != nil {
		return Message{}, malformed("JSON: %v", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return Message{}, malformed("JSON: data after the object")
	}
	if j.Cid == nil {
		return Message{}, malformed("JSON: no Cid")
	}
	var m Message
	var err error
	if m.Cid, err = cid.Decode(j.Cid.Link); err != nil {
		return Message{}, malformed("Cid %q: %v", j.Cid.Link, err)
	}
	if n := m.Cid.ByteLen(); n > MaxCIDLen {
		return Message{}, malformed("Cid of %d bytes, over %d", n, MaxCIDLen)
	}
	if len(j.Addrs) > MaxAddrs {
		return Message{}, malformed("Addrs: %d addresses, over %d", len(j.Addrs), MaxAddrs)
	}
	if m.Addrs, err = parseAddrs(j.Addrs); err != nil {
		return Message{}, err
	}
	if len(j.ExtraData) > MaxFieldLen {
		return Message{}, malformed("ExtraData of %d bytes, over %d", len(j.ExtraData), MaxFieldLen)
	}
	m.ExtraData = j.ExtraData
	if j.OrigPeer != "" {
		if len(j.OrigPeer) > MaxOrigPeerLen {
			return Message{}, malformed("OrigPeer of %d bytes, over %d", len(j.OrigPeer), MaxOrigPeerLen)
		}
		if m.OrigPeer, err = peer.Decode(j.OrigPeer); err != nil {
			return Message{}, malformed("OrigPeer %q: %v", j.OrigPeer, err)
		}
	}
	return m, nil
}

// MarshalJSON implements json.Marshaler with [Message.EncodeJSON].
func (m Message) MarshalJSON() ([]byte, error) { return m.EncodeJSON() }

// UnmarshalJSON implements json.Unmarshaler with [DecodeJSON].
func (m *Message) UnmarshalJSON(b []byte) error {
	d, err := DecodeJSON(b)
	if err != nil {
		return err
	}
	*m = d
	return nil
}
