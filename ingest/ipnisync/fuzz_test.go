package ipnisync_test

import (
	"errors"
	"testing"

	"github.com/indexkit/indexkit/ingest/ipnisync"
)

// FuzzDecodeSignedHead: the head decoder never panics, fails only with
// ErrMalformedHead, and what it accepts re-encodes to a document that
// decodes to the same head.
func FuzzDecodeSignedHead(f *testing.F) {
	key := seededKey(f, 1)
	_, head := rawBlock(7)
	for _, topic := range []string{ipnisync.DefaultTopic, ""} {
		h, err := ipnisync.SignHead(key, head, topic)
		if err != nil {
			f.Fatal(err)
		}
		doc, _ := h.Encode()
		f.Add(doc)
	}
	f.Add([]byte(`{"head":{"/":"QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"},"pubkey":{"/":{"bytes":"AA=="}},"sig":{"/":{"bytes":""}}}`))
	f.Add([]byte(`{"head":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ipnisync.DecodeSignedHead(data)
		if err != nil {
			if !errors.Is(err, ipnisync.ErrMalformedHead) {
				t.Fatalf("error %v does not wrap ErrMalformedHead", err)
			}
			return
		}
		if _, err := h.Signer(); err != nil && !errors.Is(err, ipnisync.ErrBadSignature) {
			t.Fatalf("Signer error %v does not wrap ErrBadSignature", err)
		}
		doc, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ipnisync.DecodeSignedHead(doc)
		if err != nil {
			t.Fatalf("re-encoded head %s does not decode: %v", doc, err)
		}
		if !again.Head.Equals(h.Head) || again.Topic != h.Topic || string(again.PubKey) != string(h.PubKey) || string(again.Sig) != string(h.Sig) {
			t.Fatalf("round trip changed the head: %+v -> %+v", h, again)
		}
	})
}
