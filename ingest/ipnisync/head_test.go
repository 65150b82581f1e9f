package ipnisync_test

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/indexkit/indexkit/ingest/ipnisync"
	"github.com/libp2p/go-libp2p/core/crypto"
)

func TestSignedHeadKeyTypes(t *testing.T) {
	_, head := rawBlock(7)
	_, other := rawBlock(8)
	for name, typ := range map[string]int{
		"Ed25519": crypto.Ed25519, "Secp256k1": crypto.Secp256k1, "ECDSA": crypto.ECDSA, "RSA": crypto.RSA,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := keyOfType(t, typ)
			id := peerID(t, key)
			for _, topic := range []string{ipnisync.DefaultTopic, "", "/indexer/ingest/devnet"} {
				h, err := ipnisync.SignHead(key, head, topic)
				if err != nil {
					t.Fatal(err)
				}
				doc, err := h.Encode()
				if err != nil {
					t.Fatal(err)
				}
				got, err := ipnisync.DecodeSignedHead(doc)
				if err != nil {
					t.Fatal(err)
				}
				if err := got.Verify(id); err != nil {
					t.Fatalf("topic %q: %v", topic, err)
				}
				if signer, err := got.Signer(); err != nil || signer != id {
					t.Fatalf("Signer: %s, %v", signer, err)
				}

				// Another publisher, another head, another topic: refused.
				if err := got.Verify(peerID(t, seededKey(t, 9))); !errors.Is(err, ipnisync.ErrBadSignature) {
					t.Errorf("wrong publisher: %v", err)
				}
				forged := *got
				forged.Head = other
				if err := forged.Verify(id); !errors.Is(err, ipnisync.ErrBadSignature) || !strings.Contains(err.Error(), id.String()) {
					t.Errorf("other head: %v", err)
				}
				forged = *got
				forged.Topic = topic + "x"
				if err := forged.Verify(id); !errors.Is(err, ipnisync.ErrBadSignature) {
					t.Errorf("other topic: %v", err)
				}
				forged = *got
				forged.PubKey = forged.PubKey[:len(forged.PubKey)/2]
				if err := forged.Verify(id); !errors.Is(err, ipnisync.ErrBadSignature) {
					t.Errorf("truncated key: %v", err)
				}
			}
		})
	}
}

// The encoding is dag-json as go-libipni writes it: keys head, pubkey,
// sig, topic in that order, unpadded standard base64.
func TestSignedHeadEncoding(t *testing.T) {
	key := seededKey(t, 1)
	_, head := rawBlock(7)
	h, err := ipnisync.SignHead(key, head, ipnisync.DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\{"head":\{"/":"(b[a-z2-7]+)"\},"pubkey":\{"/":\{"bytes":"([A-Za-z0-9+/]+)"\}\},"sig":\{"/":\{"bytes":"([A-Za-z0-9+/]+)"\}\},"topic":"/indexer/ingest/mainnet"\}$`)
	m := re.FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatalf("head document %s", doc)
	}
	if m[1] != head.String() {
		t.Errorf("head %s", m[1])
	}
	pub, _ := crypto.MarshalPublicKey(key.GetPublic())
	if m[2] != base64.RawStdEncoding.EncodeToString(pub) {
		t.Errorf("pubkey %s", m[2])
	}

	// Padded base64 and reordered keys decode too; a missing field, a
	// wrongly typed one, a bad CID or bad base64 does not.
	padded := `{"topic":"t","sig":{"/":{"bytes":"AAA="}},"pubkey":{"/":{"bytes":"AA=="}},"head":{"/":"` + head.String() + `"}}`
	got, err := ipnisync.DecodeSignedHead([]byte(padded))
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != "t" || len(got.Sig) != 2 || len(got.PubKey) != 1 || !got.Head.Equals(head) {
		t.Fatalf("decoded %+v", got)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`,
		`{"pubkey":{"/":{"bytes":"AA"}},"sig":{"/":{"bytes":"AA"}}}`,
		`{"head":{"/":"` + head.String() + `"},"sig":{"/":{"bytes":"AA"}}}`,
		`{"head":{"/":"nope"},"pubkey":{"/":{"bytes":"AA"}},"sig":{"/":{"bytes":"AA"}}}`,
		`{"head":"` + head.String() + `","pubkey":{"/":{"bytes":"AA"}},"sig":{"/":{"bytes":"AA"}}}`,
		`{"head":{"/":"` + head.String() + `"},"pubkey":{"/":{"bytes":"!!"}},"sig":{"/":{"bytes":"AA"}}}`,
		`{"head":{"/":"` + head.String() + `"},"pubkey":{"/":{"bytes":"AA"}},"sig":{"/":{"bytes":"AA"}},"topic":7}`,
		`{"head":{"/":"` + head.String() + `"},"pubkey":"AA","sig":{"/":{"bytes":"AA"}}}`,
		`{"Head":{"/":"` + head.String() + `"},"pubkey":{"/":{"bytes":"AA"}},"sig":{"/":{"bytes":"AA"}}}`,
	} {
		if _, err := ipnisync.DecodeSignedHead([]byte(bad)); !errors.Is(err, ipnisync.ErrMalformedHead) {
			t.Errorf("DecodeSignedHead(%s): %v, want ErrMalformedHead", bad, err)
		}
	}
}

// A head that does not decode fails with an error that quotes nothing the
// publisher wrote (it ends up in provider records anyone reads): not the
// character encoding/json shows, not a CID string.
func TestDecodeSignedHeadQuotesNothing(t *testing.T) {
	const marker = "MARKER"
	for _, body := range []string{
		"<html><title>" + marker + "</title></html>",
		`{"head":{"/":"` + marker + strings.Repeat("x", 500) + `"},"pubkey":{"/":{"bytes":""}},"sig":{"/":{"bytes":""}}}`,
		`{"head":{"/":"bafkqaaa"},"pubkey":{"/":{"bytes":""}},"sig":{"/":{"bytes":""}},"topic":` + marker + `}`,
	} {
		_, err := ipnisync.DecodeSignedHead([]byte(body))
		if !errors.Is(err, ipnisync.ErrMalformedHead) {
			t.Fatalf("DecodeSignedHead(%.30q): %v, want ErrMalformedHead", body, err)
		}
		if msg := err.Error(); strings.Contains(msg, marker) || strings.Contains(msg, "'<'") || strings.Contains(msg, "'M'") {
			t.Errorf("DecodeSignedHead(%.30q): error %q quotes the publisher's answer", body, msg)
		}
	}
}
