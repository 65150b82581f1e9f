package piece_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/ipld/go-ipld-prime/codec/dagjson"
	"github.com/ipld/go-ipld-prime/datamodel"
	"github.com/ipld/go-ipld-prime/fluent/qp"
	"github.com/ipld/go-ipld-prime/node/basicnode"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/piece"
	"github.com/indexkit/indexkit/piece/piecetest"
)

// ipldSigned encodes the signed map with go-ipld-prime's DAG-JSON encoder,
// the reference the hand-written encoder must match byte for byte.
func ipldSigned(t testing.TB, provider peer.ID, pc cid.Cid, seed string, samples []string, code string) []byte {
	t.Helper()
	n, err := qp.BuildMap(basicnode.Prototype.Any, -1, func(ma datamodel.MapAssembler) {
		// Insertion order differs from the sorted order on purpose.
		qp.MapEntry(ma, "seed", qp.String(seed))
		qp.MapEntry(ma, "providerId", qp.String(provider.String()))
		if code != "" {
			qp.MapEntry(ma, "error", qp.String(code))
		} else {
			qp.MapEntry(ma, "samples", qp.List(-1, func(la datamodel.ListAssembler) {
				for _, s := range samples {
					qp.ListEntry(la, qp.String(s))
				}
			}))
		}
		qp.MapEntry(ma, "pieceCid", qp.String(pc.String()))
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := dagjson.Encode(n, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSignedBytesMatchGoIPLDPrime(t *testing.T) {
	p, pc := piecetest.Provider(1), piecetest.PieceCID(1)
	var samples []string
	for _, c := range piecetest.Payloads(0, 3) {
		samples = append(samples, c.String())
	}
	cidV0, _ := cid.Decode("QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n")
	all := ""
	for c := byte(0x20); c <= 0x7e; c++ {
		if c != '"' && c != '\\' {
			all += string(c)
		}
	}
	for _, tc := range []struct {
		name    string
		seed    string
		samples []string
		code    string
	}{
		{"one sample", "a7b3c9d2e4f6", samples[:1], ""},
		{"three samples", "123456", samples, ""},
		{"CIDv0 sample", "x", []string{cidV0.String()}, ""},
		{"no samples", "x", []string{}, ""},
		{"every allowed seed byte", all, samples[:1], ""},
		{"provider not found", "round-42", nil, piece.CodeProviderNotFound},
		{"piece not found", "round-42", nil, piece.CodePieceNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := piece.SignedBytes(p, pc, tc.seed, tc.samples, tc.code)
			if err != nil {
				t.Fatal(err)
			}
			want := ipldSigned(t, p, pc, tc.seed, tc.samples, tc.code)
			if !bytes.Equal(got, want) {
				t.Errorf("SignedBytes:\n got %s\nwant %s (go-ipld-prime dagjson)", got, want)
			}
		})
	}
	// The exact bytes, for implementers in other languages.
	got, _ := piece.SignedBytes(p, pc, "s", samples[:1], "")
	want := `{"pieceCid":"` + pc.String() + `","providerId":"` + p.String() + `","samples":["` + samples[0] + `"],"seed":"s"}`
	if string(got) != want {
		t.Errorf("SignedBytes = %s, want %s", got, want)
	}
}

func TestValidSeed(t *testing.T) {
	for _, s := range []string{"", strings.Repeat("a", piece.MaxSeedLen+1), `a"b`, `a\b`, "a\nb", "a\x00", "ü", "\x7f"} {
		if piece.ValidSeed(s) == nil {
			t.Errorf("ValidSeed(%q) = nil, want an error", s)
		}
	}
	for _, s := range []string{"0", strings.Repeat("f", piece.MaxSeedLen), "a b+c/d=", "{}[]<>&'"} {
		if err := piece.ValidSeed(s); err != nil {
			t.Errorf("ValidSeed(%q) = %v", s, err)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	k1, err := piece.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.Type() != crypto.Ed25519 {
		t.Errorf("new key type %v, want Ed25519", k1.Type())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := piece.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equals(k2) {
		t.Error("second LoadOrCreateKey returned another key")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".piece-key-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Concurrent first runs agree on one key.
	path2 := filepath.Join(dir, "key2")
	keys := make([]crypto.PrivKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := piece.LoadOrCreateKey(path2)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || !k.Equals(keys[0]) {
			t.Fatal("concurrent LoadOrCreateKey calls returned different keys")
		}
	}

	// Refused: readable by others, garbage, a directory.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := piece.LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key: err = %v, want a refusal", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := piece.LoadOrCreateKey(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("garbage key file: err = %v, want an error naming the file", err)
	}
	if _, err := piece.LoadOrCreateKey(dir); err == nil {
		t.Error("a directory as key file: no error")
	}
	if _, err := piece.LoadOrCreateKey(filepath.Join(dir, "missing", "key")); err == nil {
		t.Error("key in a missing directory: no error")
	}
}

func TestPubKeyRoundTrip(t *testing.T) {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := piece.EncodePubKey(k.GetPublic())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := piece.DecodePubKey(s)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equals(k.GetPublic()) {
		t.Error("DecodePubKey(EncodePubKey(pub)) != pub")
	}
	for _, bad := range []string{"", "!!", "AAAA"} {
		if _, err := piece.DecodePubKey(bad); err == nil {
			t.Errorf("DecodePubKey(%q): no error", bad)
		}
	}
}

func encodeSig(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }
