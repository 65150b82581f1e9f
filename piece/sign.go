package piece

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Error codes of signed not-found answers (the "error" field).
const (
	CodeProviderNotFound = "PROVIDER_NOT_FOUND"
	CodePieceNotFound    = "PIECE_NOT_FOUND"
)

// MaxSeedLen is the longest seed a sample request may carry, in bytes.
const MaxSeedLen = 256

// ValidSeed reports whether seed may be used in a sample request: 1 to
// [MaxSeedLen] bytes of printable ASCII (0x20–0x7E) other than '"' and
// '\'. A DRAND randomness string (hex), a decimal round number or base64
// all qualify. The restriction means no string of the signed map ever needs
// a JSON escape, so every DAG-JSON encoder in every language produces the
// same bytes (encoders disagree on how to escape control characters and
// U+2028).
func ValidSeed(seed string) error {
	if len(seed) == 0 {
		return errors.New("seed is empty")
	}
	if len(seed) > MaxSeedLen {
		return fmt.Errorf("seed is %d bytes long, more than %d", len(seed), MaxSeedLen)
	}
	for i := 0; i < len(seed); i++ {
		if c := seed[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("seed byte %d is %q: only printable ASCII other than '\"' and '\\' is allowed", i, c)
		}
	}
	return nil
}

// SignedBytes returns the bytes the signature of a sample answer covers: the
// DAG-JSON encoding of
//
//	{"pieceCid": pieceCid, "providerId": provider, "samples": [samples...], "seed": seed}
//
// for an answer with samples, or, when errCode is not empty (a 404 answer),
//
//	{"error": errCode, "pieceCid": pieceCid, "providerId": provider, "seed": seed}
//
// Every value is a DAG-JSON string (CIDs are not encoded as links
// {"/": …}): providerId is the peer ID in its base58 form
// (peer.ID.String), pieceCid is cid.Cid.String of the piece (base32 for
// CIDv1), samples are the strings of the answer's "samples" array, as the
// server wrote them (cid.Cid.String). Keys are sorted bytewise as the
// DAG-JSON spec requires; there is no whitespace. So the message is built
// from the very strings a client sends and receives, and any DAG-JSON
// encoder produces the same bytes (a test checks them against
// go-ipld-prime's). The seed must pass [ValidSeed]; samples and errCode
// must need no JSON escape (CID strings and the Code constants do not).
func SignedBytes(provider peer.ID, pieceCid cid.Cid, seed string, samples []string, errCode string) ([]byte, error) {
	if err := ValidSeed(seed); err != nil {
		return nil, err
	}
	for i, s := range samples {
		if !plain(s) {
			return nil, fmt.Errorf("sample %d needs a JSON escape", i)
		}
	}
	if !plain(errCode) {
		return nil, errors.New("error code needs a JSON escape")
	}
	return appendSigned(nil, provider.String(), pieceCid.String(), seed, samples, errCode), nil
}

// plain reports whether s needs no JSON escape.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendSigned appends the signed DAG-JSON map to dst. All strings are
// escape-free (checked by the callers).
func appendSigned(dst []byte, provider, pieceCid, seed string, samples []string, errCode string) []byte {
	if errCode != "" {
		dst = append(dst, `{"error":"`...)
		dst = append(dst, errCode...)
		dst = append(dst, `","pieceCid":"`...)
	} else {
		dst = append(dst, `{"pieceCid":"`...)
	}
	dst = append(dst, pieceCid...)
	dst = append(dst, `","providerId":"`...)
	dst = append(dst, provider...)
	if errCode == "" {
		dst = append(dst, `","samples":[`...)
		for i, s := range samples {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, s...)
			dst = append(dst, '"')
		}
		dst = append(dst, `],"seed":"`...)
	} else {
		dst = append(dst, `","seed":"`...)
	}
	dst = append(dst, seed...)
	dst = append(dst, `"}`...)
	return dst
}

// signer signs answers with the handler's key. For an Ed25519 key it signs
// with curve25519-voi's Ed25519, with the raw key extracted once: RFC 8032
// signatures are deterministic, so its bytes are exactly those of
// crypto/ed25519 and of the libp2p key's Sign (a test checks this over
// random keys and messages), and it signs in about 60% of the time (its
// base-point multiplication uses larger precomputed tables), which is most
// of a sample answer's cost. Other key types go through the libp2p
// interface.
//
// Ed25519 signatures are deterministic: the same key and message always give
// the same signature. The signer therefore remembers the signatures of the
// last messages it signed (sigMemo) and reuses one only for a byte-identical
// message. The message is built from the store on every request, so a reused
// signature covers exactly the answer being sent, never an older one; what
// it saves is the signing of the same answer twice, as when many checkers
// ask for the same piece with the same DRAND round's seed.
type signer struct {
	ed   voied25519.PrivateKey // nil unless the key is Ed25519
	key  crypto.PrivKey
	memo *memo[[ed25519.SignatureSize]byte] // nil unless ed is set
}

// memoSize bounds the signatures a signer remembers: two generations of at
// most this many messages (a few hundred bytes each).
const memoSize = 8192

func newSigner(key crypto.PrivKey) signer {
	s := signer{key: key}
	if _, ok := key.(*crypto.Ed25519PrivateKey); ok {
		if raw, err := key.Raw(); err == nil && len(raw) == ed25519.PrivateKeySize {
			s.ed = voied25519.PrivateKey(raw)
			s.memo = newMemo[[ed25519.SignatureSize]byte](memoSize)
		}
	}
	return s
}

// appendSig appends the standard base64 of the signature of msg to dst.
func (s signer) appendSig(dst, msg []byte) ([]byte, error) {
	if s.ed != nil {
		sig, ok := s.memo.get(msg)
		if !ok {
			copy(sig[:], voied25519.Sign(s.ed, msg))
			s.memo.put(msg, sig)
		}
		return base64.StdEncoding.AppendEncode(dst, sig[:]), nil
	}
	sig, err := s.key.Sign(msg)
	if err != nil {
		return dst, err
	}
	return base64.StdEncoding.AppendEncode(dst, sig), nil
}

// EncodePubKey returns the "pubkey" field of answers signed with a key whose
// public half is pub: standard base64 (with padding) of the libp2p
// protobuf encoding of the key (crypto.MarshalPublicKey). The server's peer
// ID is derived from the same bytes (peer.IDFromPublicKey).
func EncodePubKey(pub crypto.PubKey) (string, error) {
	b, err := crypto.MarshalPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("piece: encode public key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodePubKey parses a "pubkey" field written by [EncodePubKey].
func DecodePubKey(s string) (crypto.PubKey, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("piece: pubkey is not standard base64: %w", err)
	}
	pub, err := crypto.UnmarshalPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("piece: pubkey is not a libp2p public key: %w", err)
	}
	return pub, nil
}

// LoadOrCreateKey returns the server's signing key kept in the file at path:
// the libp2p protobuf encoding of the private key (crypto.MarshalPrivateKey).
// When the file does not exist it creates it with a new Ed25519 key, mode
// 0600, atomically (written to a temporary file in the same directory and
// linked into place, so concurrent first runs agree on one key). An
// existing file that others can read or write (mode & 0o077 != 0) is
// refused, as ssh refuses such keys; so is a file that holds no key.
func LoadOrCreateKey(path string) (crypto.PrivKey, error) {
	if k, err := loadKey(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("piece: generate key: %w", err)
	}
	b, err := crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("piece: encode key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".piece-key-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("piece: create key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("piece: write key file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("piece: write key file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("piece: write key file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process won the race
			return loadKey(path)
		}
		return nil, fmt.Errorf("piece: create key file %s: %w", path, err)
	}
	return k, nil
}

func loadKey(path string) (crypto.PrivKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("piece: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("piece: key file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("piece: key file %s has mode %v: others may read it; chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("piece: read key file: %w", err)
	}
	k, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("piece: key file %s holds no libp2p private key: %w", path, err)
	}
	return k, nil
}
