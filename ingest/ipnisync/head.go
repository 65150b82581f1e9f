package ipnisync

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/internal/httperr"
)

// DefaultTopic is the gossipsub topic of the IPNI mainnet, the topic a
// [Publisher] names in its signed head unless [WithTopic] says otherwise,
// and the topic a head without one is taken to mean.
const DefaultTopic = "/indexer/ingest/mainnet"

// maxHeadSize bounds the signed head document a Client reads. A head with
// an 8192-bit RSA key is under 3 KiB.
const maxHeadSize = 64 << 10

// SignedHead is the document served at /ipni/v1/ad/head: the CID of the
// newest advertisement, signed by the publisher's key together with the
// topic the publisher announces on.
//
// On the wire it is dag-json (the reference schema is
// dagsync/ipnisync/head/schema.ipldsch of go-libipni):
//
//	{"head":{"/":"<cid>"},"pubkey":{"/":{"bytes":"<b64>"}},"sig":{"/":{"bytes":"<b64>"}},"topic":"<topic>"}
//
// with topic optional. Sig is PubKey's signature over the bytes of the
// head CID followed by the UTF-8 bytes of the topic (none when the topic is
// absent). It is a raw libp2p key signature, not an envelope.
type SignedHead struct {
	// Head is the CID of the newest advertisement.
	Head cid.Cid
	// Topic is the topic the publisher announces on; "" when absent, which
	// readers take as [DefaultTopic] but which is signed as no bytes.
	Topic string
	// PubKey is the signer's libp2p public key, protobuf-marshalled
	// (crypto.MarshalPublicKey).
	PubKey []byte
	// Sig is the signature over Head's bytes ‖ Topic.
	Sig []byte
}

// SignHead signs head and topic with key. An empty topic is left out of the
// document and of the signed bytes, as the reference does.
func SignHead(key crypto.PrivKey, head cid.Cid, topic string) (*SignedHead, error) {
	if key == nil {
		return nil, errors.New("ipnisync: sign head: nil key")
	}
	if !head.Defined() {
		return nil, errors.New("ipnisync: sign head: undefined CID")
	}
	pub, err := crypto.MarshalPublicKey(key.GetPublic())
	if err != nil {
		return nil, fmt.Errorf("ipnisync: sign head: marshal public key: %w", err)
	}
	sig, err := key.Sign(headPayload(head, topic))
	if err != nil {
		return nil, fmt.Errorf("ipnisync: sign head: %w", err)
	}
	return &SignedHead{Head: head, Topic: topic, PubKey: pub, Sig: sig}, nil
}

func headPayload(head cid.Cid, topic string) []byte {
	b := head.Bytes()
	return append(b[:len(b):len(b)], topic...)
}

// Signer checks that Sig is PubKey's signature over Head and Topic and
// returns the peer ID PubKey derives to. It does not say whether that peer
// may publish the chain: see [SignedHead.Verify].
func (h *SignedHead) Signer() (peer.ID, error) {
	if len(h.Sig) == 0 {
		return "", fmt.Errorf("%w: no signature", ErrBadSignature)
	}
	if len(h.PubKey) == 0 {
		return "", fmt.Errorf("%w: no public key", ErrBadSignature)
	}
	if !h.Head.Defined() {
		return "", fmt.Errorf("%w: undefined head CID", ErrBadSignature)
	}
	pub, err := crypto.UnmarshalPublicKey(h.PubKey)
	if err != nil {
		return "", fmt.Errorf("%w: public key: %v", ErrBadSignature, err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("%w: public key: %v", ErrBadSignature, err)
	}
	ok, err := pub.Verify(headPayload(h.Head, h.Topic), h.Sig)
	if err != nil {
		return "", fmt.Errorf("%w: signature by %s: %v", ErrBadSignature, id, err)
	}
	if !ok {
		return "", fmt.Errorf("%w: signature by %s does not verify over head %s and topic %q", ErrBadSignature, id, h.Head, h.Topic)
	}
	return id, nil
}

// Verify checks the signature and that the signer is publisher.
func (h *SignedHead) Verify(publisher peer.ID) error {
	signer, err := h.Signer()
	if err != nil {
		return err
	}
	if signer != publisher {
		return fmt.Errorf("%w: head %s signed by %s, want publisher %s", ErrBadSignature, h.Head, signer, publisher)
	}
	return nil
}

// Encode writes the head as dag-json, keys in the order the reference
// encoder writes them (head, pubkey, sig, topic), bytes in unpadded
// standard base64.
func (h *SignedHead) Encode() ([]byte, error) {
	if !h.Head.Defined() {
		return nil, errors.New("ipnisync: encode head: undefined CID")
	}
	var b bytes.Buffer
	b.WriteString(`{"head":{"/":"`)
	b.WriteString(h.Head.String())
	b.WriteString(`"},"pubkey":`)
	writeBytes(&b, h.PubKey)
	b.WriteString(`,"sig":`)
	writeBytes(&b, h.Sig)
	if h.Topic != "" {
		// dag-json leaves <, > and & as they are; encoding/json would
		// escape them for HTML and change the bytes.
		b.WriteString(`,"topic":`)
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(h.Topic); err != nil {
			return nil, fmt.Errorf("ipnisync: encode head: topic: %w", err)
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeBytes(b *bytes.Buffer, p []byte) {
	b.WriteString(`{"/":{"bytes":"`)
	b.WriteString(base64.RawStdEncoding.EncodeToString(p))
	b.WriteString(`"}}`)
}

// DecodeSignedHead parses a dag-json signed head. It requires head, pubkey
// and sig, takes topic when present (a string), and ignores other keys.
// Keys are matched exactly (dag-json is case-sensitive); bytes may be
// padded or unpadded base64, as the reference decoder accepts. It does not
// check the signature: call [SignedHead.Verify]. Errors wrap
// [ErrMalformedHead].
func DecodeSignedHead(data []byte) (*SignedHead, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedHead, httperr.JSONError(err))
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not a map", ErrMalformedHead)
	}
	var h SignedHead
	var err error
	raw, ok := m["head"]
	if !ok {
		return nil, fmt.Errorf("%w: no head", ErrMalformedHead)
	}
	if h.Head, err = decodeLink(raw); err != nil {
		return nil, fmt.Errorf("%w: head: %v", ErrMalformedHead, err)
	}
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"pubkey", &h.PubKey}, {"sig", &h.Sig}} {
		raw, ok := m[f.key]
		if !ok {
			return nil, fmt.Errorf("%w: no %s", ErrMalformedHead, f.key)
		}
		if *f.dst, err = decodeBytes(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformedHead, f.key, err)
		}
	}
	if raw, ok := m["topic"]; ok {
		if err := unmarshalStrict(raw, &h.Topic); err != nil {
			return nil, fmt.Errorf("%w: topic: %v", ErrMalformedHead, httperr.JSONError(err))
		}
	}
	return &h, nil
}

// decodeLink parses {"/":"<cid>"}.
func decodeLink(raw json.RawMessage) (cid.Cid, error) {
	var m map[string]json.RawMessage
	if err := unmarshalStrict(raw, &m); err != nil || len(m) != 1 {
		return cid.Undef, errors.New(`want a link {"/":"<cid>"}`)
	}
	var s string
	if err := unmarshalStrict(m["/"], &s); err != nil {
		return cid.Undef, errors.New(`want a link {"/":"<cid>"}`)
	}
	c, err := cid.Decode(s)
	if err != nil { // not quoted: the publisher wrote it (see the package doc)
		return cid.Undef, fmt.Errorf("bad CID of %d bytes: %v", len(s), err)
	}
	return c, nil
}

// decodeBytes parses {"/":{"bytes":"<base64>"}}.
func decodeBytes(raw json.RawMessage) ([]byte, error) {
	const want = `want bytes {"/":{"bytes":"<base64>"}}`
	var outer map[string]json.RawMessage
	if err := unmarshalStrict(raw, &outer); err != nil || len(outer) != 1 {
		return nil, errors.New(want)
	}
	var inner map[string]json.RawMessage
	if err := unmarshalStrict(outer["/"], &inner); err != nil || len(inner) != 1 {
		return nil, errors.New(want)
	}
	var s string
	if err := unmarshalStrict(inner["bytes"], &s); err != nil {
		return nil, errors.New(want)
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("base64: %v", err)
		}
	}
	return b, nil
}

// unmarshalStrict is json.Unmarshal that refuses null (and absent, nil,
// input) where a value is required.
func unmarshalStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("null")
	}
	return json.Unmarshal(raw, v)
}
