package piece

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// A remembered signature must be the one signing gives, for messages seen
// once, seen again, and seen again after the memo turned over.
func TestSignerMemo(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := newSigner(key)
	if s.memo == nil {
		t.Fatal("an Ed25519 signer has no memo")
	}
	raw, _ := key.Raw()
	check := func(msg []byte) {
		t.Helper()
		got, err := s.appendSig(nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		want := base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.PrivateKey(raw), msg))
		if string(got) != want {
			t.Fatalf("signature of %q: got %s, want %s", msg, got, want)
		}
	}
	msg := func(i int) []byte { return fmt.Appendf(nil, `{"seed":"%d"}`, i) }
	for i := range 3*memoSize + 10 {
		check(msg(i))
		if i%1000 == 0 {
			check(msg(i)) // remembered
			check(msg(0)) // maybe forgotten: signed again
		}
	}
	if n := s.memo.len(); n > 2*memoSize {
		t.Errorf("memo holds %d messages, bound %d", n, 2*memoSize)
	}
}

// The signer's Ed25519 (curve25519-voi) must give exactly the bytes of
// crypto/ed25519 and of the libp2p key's Sign, whatever the key and the
// message: clients verify with those.
func TestSignerMatchesStdlib(t *testing.T) {
	for k := range 64 {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s := newSigner(key)
		s.memo = newMemo[[ed25519.SignatureSize]byte](memoSize)
		raw, _ := key.Raw()
		for i := range 32 {
			msg := make([]byte, (k*32+i)%700)
			_, _ = rand.Read(msg)
			got, err := s.appendSig(nil, msg)
			if err != nil {
				t.Fatal(err)
			}
			std := ed25519.Sign(ed25519.PrivateKey(raw), msg)
			lp, err := key.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			want := base64.StdEncoding.EncodeToString(std)
			if string(got) != want || base64.StdEncoding.EncodeToString(lp) != want {
				t.Fatalf("key %d, message of %d bytes: signer %s, crypto/ed25519 %s, libp2p %x", k, len(msg), got, want, lp)
			}
		}
	}
}
