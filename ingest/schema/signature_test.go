package schema

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multihash"
)

func keyOf(t *testing.T, typ int) (crypto.PrivKey, peer.ID) {
	t.Helper()
	bits := -1
	if typ == crypto.RSA {
		bits = 2048
	}
	key, _, err := crypto.GenerateKeyPairWithReader(typ, bits, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

var keyTypes = map[string]int{
	"Ed25519":   crypto.Ed25519,
	"Secp256k1": crypto.Secp256k1,
	"ECDSA":     crypto.ECDSA,
	"RSA":       crypto.RSA,
}

func TestSignVerifyKeyTypes(t *testing.T) {
	for name, typ := range keyTypes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key, id := keyOf(t, typ)
			ad := sampleAds(id, id)["full"]
			if err := ad.Sign(key); err != nil {
				t.Fatal(err)
			}
			// Through the wire and back, in both codecs.
			for _, codec := range []uint64{DagJSON, DagCBOR} {
				b, c, err := ad.EncodeAs(codec)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeAdvertisement(c, b)
				if err != nil {
					t.Fatal(err)
				}
				signer, err := got.VerifySignature()
				if err != nil {
					t.Fatalf("codec 0x%x: %v", codec, err)
				}
				if signer != id {
					t.Errorf("signer %s, want %s", signer, id)
				}
			}
			// A publisher's key may sign for the provider: the signer is
			// reported, the policy is the caller's.
			pubKey, pubID := keyOf(t, typ)
			if err := ad.Sign(pubKey); err != nil {
				t.Fatal(err)
			}
			if signer, err := ad.VerifySignature(); err != nil || signer != pubID {
				t.Errorf("publisher-signed: signer %s, %v; want %s", signer, err, pubID)
			}
		})
	}
}

func TestVerifyTampered(t *testing.T) {
	key, id := seededKey(t, 1)
	_, other := seededKey(t, 2)
	base := sampleAds(id, id)["full"]
	if err := base.Sign(key); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(*Advertisement){
		"PreviousID": func(a *Advertisement) { a.PreviousID = jsonCid("another") },
		"genesis":    func(a *Advertisement) { a.PreviousID = cid.Undef },
		"Entries":    func(a *Advertisement) { a.Entries = NoEntries },
		"Provider":   func(a *Advertisement) { a.Provider = other.String() },
		"Addresses":  func(a *Advertisement) { a.Addresses = a.Addresses[:1] },
		"Address":    func(a *Advertisement) { a.Addresses = []string{"/ip4/6.6.6.6/tcp/1/http", a.Addresses[1]} },
		"Metadata":   func(a *Advertisement) { a.Metadata = []byte{0x80, 0x12} },
		"IsRm":       func(a *Advertisement) { a.IsRm = true },
	}
	for name, tamper := range tests {
		t.Run(name, func(t *testing.T) {
			ad := *base
			tamper(&ad)
			_, err := ad.VerifySignature()
			if !errors.Is(err, ErrInvalidSignature) {
				t.Fatalf("error %v, want ErrInvalidSignature", err)
			}
			if !strings.Contains(err.Error(), "signed payload does not match") {
				t.Errorf("error %q does not name the problem", err)
			}
		})
	}
	t.Run("envelope bytes", func(t *testing.T) {
		ad := *base
		ad.Signature = append([]byte(nil), base.Signature...)
		ad.Signature[len(ad.Signature)-1] ^= 1
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "envelope") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		ad := *base
		ad.Signature = []byte("not an envelope")
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		ad := *base
		ad.Signature = nil
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrNoSignature) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("wrong payload type", func(t *testing.T) {
		ad := *base
		payload, _ := adPayload(&ad, false)
		sig, err := seal(ExtendedProviderSignatureType, payload, key)
		if err != nil {
			t.Fatal(err)
		}
		ad.Signature = sig
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "payload type") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("wrong domain", func(t *testing.T) {
		ad := *base
		payload, _ := adPayload(&ad, false)
		env, err := sealDomain("libp2p-routing-state", AdSignatureType, payload, key)
		if err != nil {
			t.Fatal(err)
		}
		ad.Signature = env
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) {
			t.Fatalf("error %v", err)
		}
	})
}

// TestContextIDNotSigned pins a property of the IPNI signature (and of the
// reference implementation): ContextID and ExtendedProvider are not in the
// ad signature payload, so changing them keeps the ad signature valid.
func TestContextIDNotSigned(t *testing.T) {
	key, id := seededKey(t, 1)
	ad := sampleAds(id, id)["full"]
	if err := ad.Sign(key); err != nil {
		t.Fatal(err)
	}
	ad.ContextID = []byte("someone else's context")
	if signer, err := ad.VerifySignature(); err != nil || signer != id {
		t.Fatalf("ContextID change: %s, %v; the reference accepts it", signer, err)
	}
}

func TestLegacySignature(t *testing.T) {
	key, id := seededKey(t, 1)
	ad := sampleAds(id, id)["full"]
	payload, err := adPayload(ad, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(payload) == sha256Len {
		t.Fatal("legacy payload has the current size")
	}
	// The legacy payload wraps the raw bytes: decoding it gives them back.
	dm, err := multihash.Decode(payload)
	if err != nil || dm.Code != multihash.SHA2_256 {
		t.Fatalf("legacy payload %x: %v", payload, err)
	}
	if ad.Signature, err = seal(AdSignatureType, payload, key); err != nil {
		t.Fatal(err)
	}
	if signer, err := ad.VerifySignature(); err != nil || signer != id {
		t.Fatalf("legacy: %s, %v", signer, err)
	}
	ad.Metadata = []byte{1}
	if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) {
		t.Fatalf("tampered legacy: %v", err)
	}
}

func TestExtendedProviders(t *testing.T) {
	key, id := seededKey(t, 1)
	epKey, epID := seededKey(t, 2)
	_, strangerID := seededKey(t, 3)
	keys := func(s string) (crypto.PrivKey, error) {
		if s == epID.String() {
			return epKey, nil
		}
		return nil, errors.New("no key for " + s)
	}
	signed := func(t *testing.T) *Advertisement {
		t.Helper()
		ad := sampleAds(id, epID)["extended"]
		if err := ad.SignWithExtendedProviders(key, keys); err != nil {
			t.Fatal(err)
		}
		return ad
	}

	t.Run("round trip", func(t *testing.T) {
		ad := signed(t)
		b, c, err := ad.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAdvertisement(c, b)
		if err != nil {
			t.Fatal(err)
		}
		if signer, err := got.VerifySignature(); err != nil || signer != id {
			t.Fatalf("%s, %v", signer, err)
		}
	})
	t.Run("Sign refuses", func(t *testing.T) {
		ad := sampleAds(id, epID)["extended"]
		if err := ad.Sign(key); !errors.Is(err, ErrInvalidAdvertisement) {
			t.Fatalf("Sign: %v", err)
		}
	})
	t.Run("without extended providers", func(t *testing.T) {
		ad := sampleAds(id, epID)["full"]
		if err := ad.SignWithExtendedProviders(key, keys); err != nil {
			t.Fatal(err)
		}
		if _, err := ad.VerifySignature(); err != nil {
			t.Fatal(err)
		}
	})
	for name, tamper := range map[string]func(*Advertisement){
		"entry Metadata":  func(a *Advertisement) { a.ExtendedProvider.Providers[1].Metadata = []byte{9} },
		"entry Addresses": func(a *Advertisement) { a.ExtendedProvider.Providers[1].Addresses = nil },
		"Override":        func(a *Advertisement) { a.ExtendedProvider.Override = false },
		"ContextID":       func(a *Advertisement) { a.ContextID = []byte("other") },
	} {
		t.Run("tampered "+name, func(t *testing.T) {
			ad := signed(t)
			tamper(ad)
			_, err := ad.VerifySignature()
			if !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "extended provider") {
				t.Fatalf("error %v", err)
			}
		})
	}
	t.Run("entry signed by another key", func(t *testing.T) {
		// The envelope is valid and its payload matches, but it was made
		// by the key of the main provider, not of the entry's ID. The
		// reference accepts this; indexkit does not.
		ad := signed(t)
		p := &ad.ExtendedProvider.Providers[1]
		payload, _ := extendedPayload(ad, p)
		var err error
		if p.Signature, err = seal(ExtendedProviderSignatureType, payload, key); err != nil {
			t.Fatal(err)
		}
		_, err = ad.VerifySignature()
		if !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "not by its own key") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("provider not listed", func(t *testing.T) {
		ad := sampleAds(id, epID)["extended"]
		ad.ExtendedProvider.Providers = ad.ExtendedProvider.Providers[1:]
		if err := ad.SignWithExtendedProviders(key, keys); !errors.Is(err, ErrInvalidAdvertisement) {
			t.Fatalf("sign: %v", err)
		}
		signedAd := signed(t)
		signedAd.ExtendedProvider.Providers = signedAd.ExtendedProvider.Providers[1:]
		if _, err := signedAd.VerifySignature(); !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "lacks the Provider") {
			t.Fatalf("verify: %v", err)
		}
	})
	t.Run("unsigned entry", func(t *testing.T) {
		ad := signed(t)
		ad.ExtendedProvider.Providers[1].Signature = nil
		if _, err := ad.VerifySignature(); !errors.Is(err, ErrInvalidSignature) || !strings.Contains(err.Error(), "not signed") {
			t.Fatalf("verify: %v", err)
		}
	})
	t.Run("key fetcher gives the wrong key", func(t *testing.T) {
		ad := sampleAds(id, epID)["extended"]
		ad.ExtendedProvider.Providers[1].ID = strangerID.String()
		err := ad.SignWithExtendedProviders(key, func(string) (crypto.PrivKey, error) { return epKey, nil })
		if !errors.Is(err, ErrInvalidAdvertisement) || !strings.Contains(err.Error(), "the key is that of") {
			t.Fatalf("sign: %v", err)
		}
	})
	t.Run("IsRm", func(t *testing.T) {
		ad := sampleAds(id, epID)["extended"]
		ad.IsRm = true
		if err := ad.SignWithExtendedProviders(key, keys); !errors.Is(err, ErrInvalidAdvertisement) {
			t.Fatalf("sign: %v", err)
		}
	})
}
