package piece_test

import (
	"crypto/rand"
	"encoding/json"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/piecetest"
)

// FuzzVerifySample: decoding and verifying arbitrary bodies never panics,
// and nothing verifies unless it carries a valid signature by the key in
// it over the request's message.
func FuzzVerifySample(f *testing.F) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	pub, _ := piece.EncodePubKey(key.GetPublic())
	p, pc := piecetest.Provider(1), piecetest.PieceCID(1)
	samples := []string{piecetest.CID("a").String()}
	msg, _ := piece.SignedBytes(p, pc, "seed", samples, "")
	sig, _ := key.Sign(msg)
	good, _ := json.Marshal(piece.SampleResponse{Samples: samples, PubKey: pub, Signature: encodeSig(sig)})
	f.Add(good, "seed")
	f.Add([]byte(`{"error":"PIECE_NOT_FOUND","pubkey":"`+pub+`","signature":"AAAA"}`), "seed")
	f.Add([]byte(`{"samples":[],"pubkey":"","signature":""}`), "x")
	f.Add([]byte(`null`), "x")
	f.Fuzz(func(t *testing.T, body []byte, seed string) {
		v, err := piece.VerifySample(body, p, pc, seed)
		if err != nil {
			return
		}
		// Whatever verified must decode and re-verify as a struct.
		var r piece.SampleResponse
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("verified a body that does not decode: %v", err)
		}
		if _, err := r.Verify(p, pc, seed); err != nil {
			t.Fatalf("VerifySample ok, Verify fails: %v", err)
		}
		if v.Error == "" && len(v.Samples) != len(r.Samples) {
			t.Fatalf("samples %d, body %d", len(v.Samples), len(r.Samples))
		}
	})
}
