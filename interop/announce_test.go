package interop

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/indexkit/indexkit/ingest/announce"
	"github.com/ipfs/go-cid"
	ipnimsg "github.com/ipni/go-libipni/announce/message"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// announceCases are announce messages covering the 3- and 4-tuple forms,
// nil, empty and set ExtraData, no, one and several addresses.
func announceCases(t *testing.T) map[string]announce.Message {
	t.Helper()
	pub, orig := key(t, keyTypes[0], 0).id, key(t, keyTypes[0], 1).id
	ma := func(s string) multiaddr.Multiaddr {
		a, err := multiaddr.NewMultiaddr(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	p2p := "/p2p/" + pub.String()
	ad := jsonCid("announced ad")
	return map[string]announce.Message{
		"http-one-addr": {Cid: ad, Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}},
		"several-addrs": {Cid: ad, Addrs: []multiaddr.Multiaddr{
			ma("/ip4/10.0.0.1/tcp/3104/http" + p2p),
			ma("/dns4/pub.example/tcp/443/https/http-path/%2Fprefix" + p2p),
			ma("/ip6/::1/tcp/80/http" + p2p),
			ma("/ip4/10.0.0.1/udp/4001/quic-v1" + p2p),
			ma(p2p),
		}},
		"no-addrs-nil":    {Cid: ad},
		"no-addrs-empty":  {Cid: ad, Addrs: []multiaddr.Multiaddr{}},
		"extra-data":      {Cid: ad, Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}, ExtraData: []byte("t01000")},
		"orig-peer":       {Cid: ad, Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}, OrigPeer: orig},
		"orig-peer-extra": {Cid: ad, Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}, ExtraData: []byte{0, 1, 2, 255}, OrigPeer: orig},
		"cidv0":           {Cid: cid.NewCidV0(mh("v0 ad")), Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}},
		"dagcbor-cid":     {Cid: cid.NewCidV1(cid.DagCBOR, mh("cbor ad")), Addrs: []multiaddr.Multiaddr{ma("/ip4/127.0.0.1/tcp/3104/http" + p2p)}},
	}
}

// toRefMessage builds go-libipni's message with the same fields as m.
func toRefMessage(m announce.Message) ipnimsg.Message {
	r := ipnimsg.Message{Cid: m.Cid, ExtraData: cloneSlice(m.ExtraData)}
	if m.Addrs != nil {
		r.SetAddrs(m.Addrs)
	}
	if m.OrigPeer != "" {
		r.OrigPeer = m.OrigPeer.String()
	}
	return r
}

// fromRefMessage builds our message with the same fields as go-libipni's.
func fromRefMessage(t *testing.T, r ipnimsg.Message) announce.Message {
	t.Helper()
	m := announce.Message{Cid: r.Cid, ExtraData: cloneSlice(r.ExtraData)}
	if r.Addrs != nil {
		addrs, err := r.GetAddrs()
		if err != nil {
			t.Fatal(err)
		}
		m.Addrs = addrs
	}
	if r.OrigPeer != "" {
		id, err := peer.Decode(r.OrigPeer)
		if err != nil {
			t.Fatal(err)
		}
		m.OrigPeer = id
	}
	return m
}

// sameAddrs compares address lists, nil and empty alike.
func sameAddrs(a, b []multiaddr.Multiaddr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// sameMessage compares the fields that survive both wire forms: nil and
// empty address lists and ExtraData are alike.
func sameMessage(a, b announce.Message) bool {
	return a.Cid.Equals(b.Cid) && sameAddrs(a.Addrs, b.Addrs) && bytes.Equal(a.ExtraData, b.ExtraData) && a.OrigPeer == b.OrigPeer
}

// TestAnnounceCBORMatchesReference: go-libipni's Message.MarshalCBOR and
// our EncodeCBOR write the same bytes, and each side's decoder reads the
// other's bytes to the same message.
func TestAnnounceCBORMatchesReference(t *testing.T) {
	for name, m := range announceCases(t) {
		t.Run(name, func(t *testing.T) {
			ref := toRefMessage(m)
			var buf bytes.Buffer
			if err := ref.MarshalCBOR(&buf); err != nil {
				t.Fatalf("go-libipni MarshalCBOR: %v", err)
			}
			theirs := buf.Bytes()
			ours, err := m.EncodeCBOR()
			if err != nil {
				t.Fatalf("our EncodeCBOR: %v", err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("CBOR differs:\n ours   %x\n theirs %x", ours, theirs)
			}
			wantHead := byte(0x83) // a 3-tuple, or a 4-tuple with OrigPeer
			if m.OrigPeer != "" {
				wantHead = 0x84
			}
			if len(ours) == 0 || ours[0] != wantHead {
				t.Errorf("CBOR starts %x, want %x", ours[:min(len(ours), 1)], wantHead)
			}

			got, err := announce.DecodeCBOR(theirs)
			if err != nil {
				t.Fatalf("our DecodeCBOR of go-libipni's %x: %v", theirs, err)
			}
			if !sameMessage(got, m) {
				t.Errorf("our DecodeCBOR gives %+v, want %+v", got, m)
			}

			var back ipnimsg.Message
			if err := back.UnmarshalCBOR(bytes.NewReader(ours)); err != nil {
				t.Fatalf("go-libipni UnmarshalCBOR of our %x: %v", ours, err)
			}
			if b := fromRefMessage(t, back); !sameMessage(b, m) {
				t.Errorf("go-libipni decodes our CBOR to %+v, want %+v", b, m)
			}
		})
	}
}

// TestAnnounceJSONMatchesReference: encoding/json of go-libipni's Message
// and our EncodeJSON write the same bytes, and each side reads the other's.
func TestAnnounceJSONMatchesReference(t *testing.T) {
	for name, m := range announceCases(t) {
		t.Run(name, func(t *testing.T) {
			ref := toRefMessage(m)
			theirs, err := json.Marshal(&ref)
			if err != nil {
				t.Fatalf("go-libipni json.Marshal: %v", err)
			}
			ours, err := m.EncodeJSON()
			if err != nil {
				t.Fatalf("our EncodeJSON: %v", err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("JSON differs:\n ours   %s\n theirs %s", ours, theirs)
			}

			got, err := announce.DecodeJSON(theirs)
			if err != nil {
				t.Fatalf("our DecodeJSON of go-libipni's %s: %v", theirs, err)
			}
			if !sameMessage(got, m) {
				t.Errorf("our DecodeJSON gives %+v, want %+v", got, m)
			}

			var back ipnimsg.Message
			if err := json.Unmarshal(ours, &back); err != nil {
				t.Fatalf("go-libipni json.Unmarshal of our %s: %v", ours, err)
			}
			if b := fromRefMessage(t, back); !sameMessage(b, m) {
				t.Errorf("go-libipni decodes our JSON to %+v, want %+v", b, m)
			}
		})
	}
}
