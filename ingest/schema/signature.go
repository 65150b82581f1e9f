package schema

import (
	"bytes"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
	"github.com/multiformats/go-multihash"
)

// The libp2p signed-envelope parameters of IPNI signatures.
const (
	// SignatureDomain is the envelope domain of ad and extended-provider
	// signatures.
	SignatureDomain = "indexer"
	// AdSignatureType is the envelope payload type of an ad signature.
	AdSignatureType = "/indexer/ingest/adSignature"
	// ExtendedProviderSignatureType is the envelope payload type of an
	// extended provider's signature.
	ExtendedProviderSignatureType = "/indexer/ingest/extendedProviderSignature"
)

// payloadRecord is the record.Record sealed in, and consumed from, an IPNI
// envelope: the payload is opaque bytes. It is passed explicitly to
// record.Seal and record.ConsumeTypedEnvelope, so it needs no registration
// with record.RegisterType (which only the untyped ConsumeEnvelope uses)
// and does not claim the payload types in the process-wide registry.
type payloadRecord struct {
	codec   string
	payload []byte
}

func (r *payloadRecord) Domain() string                    { return SignatureDomain }
func (r *payloadRecord) Codec() []byte                     { return []byte(r.codec) }
func (r *payloadRecord) MarshalRecord() ([]byte, error)    { return r.payload, nil }
func (r *payloadRecord) UnmarshalRecord(data []byte) error { r.payload = data; return nil }

var _ record.Record = (*payloadRecord)(nil)

// sha256Len is the length of a sha2-256 multihash: the size of a current
// ad signature payload. A payload of any other size is the legacy form.
const sha256Len = 34

// adPayload returns the ad signature payload: the sha2-256 multihash of
// PreviousID bytes (none for a genesis ad) ‖ Entries bytes ‖ Provider ‖
// each address ‖ Metadata ‖ IsRm as one byte. With legacy set it returns
// the form early publishers signed: the same bytes wrapped, not hashed, in
// a sha2-256 multihash header.
func adPayload(ad *Advertisement, legacy bool) ([]byte, error) {
	var buf bytes.Buffer
	if ad.PreviousID.Defined() {
		buf.Write(ad.PreviousID.Bytes())
	}
	if ad.Entries.Defined() {
		buf.Write(ad.Entries.Bytes())
	}
	buf.WriteString(ad.Provider)
	for _, a := range ad.Addresses {
		buf.WriteString(a)
	}
	buf.Write(ad.Metadata)
	buf.WriteByte(boolByte(ad.IsRm))
	if legacy {
		return multihash.Encode(buf.Bytes(), multihash.SHA2_256)
	}
	return multihash.Sum(buf.Bytes(), multihash.SHA2_256, -1)
}

// extendedPayload returns the payload an extended provider signs: the
// sha2-256 multihash of PreviousID ‖ Entries ‖ ad Provider ‖ ad ContextID ‖
// p.ID ‖ each p address ‖ p.Metadata ‖ Override as one byte.
func extendedPayload(ad *Advertisement, p *ProviderEntry) ([]byte, error) {
	var buf bytes.Buffer
	if ad.PreviousID.Defined() {
		buf.Write(ad.PreviousID.Bytes())
	}
	if ad.Entries.Defined() {
		buf.Write(ad.Entries.Bytes())
	}
	buf.WriteString(ad.Provider)
	buf.Write(ad.ContextID)
	buf.WriteString(p.ID)
	for _, a := range p.Addresses {
		buf.WriteString(a)
	}
	buf.Write(p.Metadata)
	buf.WriteByte(boolByte(ad.ExtendedProvider.Override))
	return multihash.Sum(buf.Bytes(), multihash.SHA2_256, -1)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func seal(codec string, payload []byte, key crypto.PrivKey) ([]byte, error) {
	env, err := record.Seal(&payloadRecord{codec: codec, payload: payload}, key)
	if err != nil {
		return nil, err
	}
	return env.Marshal()
}

// open checks an envelope's signature, domain and payload type, and
// returns its payload and signer.
func open(codec string, data []byte) ([]byte, peer.ID, error) {
	rec := &payloadRecord{codec: codec}
	env, err := record.ConsumeTypedEnvelope(data, rec)
	if err != nil {
		return nil, "", err
	}
	if string(env.PayloadType) != codec {
		return nil, "", fmt.Errorf("payload type is %q, want %q", env.PayloadType, codec)
	}
	signer, err := peer.IDFromPublicKey(env.PublicKey)
	if err != nil {
		return nil, "", fmt.Errorf("signer key: %w", err)
	}
	return rec.payload, signer, nil
}

// Sign sets Signature to an envelope sealed by key over the ad signature
// payload. The ad must have no ExtendedProvider: sign those with
// [Advertisement.SignWithExtendedProviders]. Sign does not validate the ad;
// sign after setting every other field, as a later change of PreviousID,
// Entries, Provider, Addresses, Metadata or IsRm voids the signature.
func (ad *Advertisement) Sign(key crypto.PrivKey) error {
	if ad.ExtendedProvider != nil {
		return fmt.Errorf("sign advertisement: %w: has an ExtendedProvider, use SignWithExtendedProviders", ErrInvalidAdvertisement)
	}
	return ad.signAd(key)
}

func (ad *Advertisement) signAd(key crypto.PrivKey) error {
	payload, err := adPayload(ad, false)
	if err != nil {
		return fmt.Errorf("sign advertisement: %w", err)
	}
	sig, err := seal(AdSignatureType, payload, key)
	if err != nil {
		return fmt.Errorf("sign advertisement: %w", err)
	}
	ad.Signature = sig
	return nil
}

// SignWithExtendedProviders signs the ad with key, as [Advertisement.Sign]
// does, and every entry of ExtendedProvider.Providers with the key of its
// ID: key itself for the entry of the ad's own Provider (which must be
// present), and keyFor(ID) for the others. It fails, leaving signatures
// partly set, if the ad is IsRm, if the Provider has no entry, or if a key
// does not derive the ID it signs for.
func (ad *Advertisement) SignWithExtendedProviders(key crypto.PrivKey, keyFor func(id string) (crypto.PrivKey, error)) error {
	ep := ad.ExtendedProvider
	if ep == nil {
		return ad.signAd(key)
	}
	if ad.IsRm {
		return fmt.Errorf("sign advertisement: %w: IsRm advertisement has an ExtendedProvider", ErrInvalidAdvertisement)
	}
	if len(ep.Providers) > 0 && !ad.listsProvider() {
		return fmt.Errorf("sign advertisement: %w: ExtendedProvider.Providers lacks the Provider %s", ErrInvalidAdvertisement, ad.Provider)
	}
	if err := ad.signAd(key); err != nil {
		return err
	}
	for i := range ep.Providers {
		p := &ep.Providers[i]
		pkey := key
		if p.ID != ad.Provider {
			var err error
			if pkey, err = keyFor(p.ID); err != nil {
				return fmt.Errorf("sign extended provider %s: %w", p.ID, err)
			}
		}
		want, err := peer.Decode(p.ID)
		if err != nil {
			return fmt.Errorf("sign extended provider %q: %w: ID is not a peer ID: %v", p.ID, ErrInvalidAdvertisement, err)
		}
		id, err := peer.IDFromPrivateKey(pkey)
		if err != nil {
			return fmt.Errorf("sign extended provider %s: %w", p.ID, err)
		}
		if id != want {
			return fmt.Errorf("sign extended provider %s: %w: the key is that of %s", p.ID, ErrInvalidAdvertisement, id)
		}
		payload, err := extendedPayload(ad, p)
		if err != nil {
			return fmt.Errorf("sign extended provider %s: %w", p.ID, err)
		}
		if p.Signature, err = seal(ExtendedProviderSignatureType, payload, pkey); err != nil {
			return fmt.Errorf("sign extended provider %s: %w", p.ID, err)
		}
	}
	return nil
}

func (ad *Advertisement) listsProvider() bool {
	for _, p := range ad.ExtendedProvider.Providers {
		if p.ID == ad.Provider {
			return true
		}
	}
	return false
}

// VerifySignature checks the ad's signature and returns the peer ID of the
// key that made it. The signer may differ from Provider (a publisher
// signing for its providers); whether that is allowed is the caller's
// policy. It accepts the legacy payload form. When the ad has an
// ExtendedProvider it also checks that the Provider is listed and that each
// entry is signed, over the extended-provider payload, by the key of its
// own ID (the reference implementation does not check the key).
//
// The signature does not cover ContextID, Signature fields or, for the ad
// signature, ExtendedProvider; see the package documentation.
//
// An unsigned ad gives [ErrNoSignature]; every other failure wraps
// [ErrInvalidSignature].
func (ad *Advertisement) VerifySignature() (peer.ID, error) {
	if len(ad.Signature) == 0 {
		return "", ErrNoSignature
	}
	payload, signer, err := open(AdSignatureType, ad.Signature)
	if err != nil {
		return "", fmt.Errorf("%w: ad envelope: %v", ErrInvalidSignature, err)
	}
	want, err := adPayload(ad, len(payload) != sha256Len)
	if err != nil {
		return "", fmt.Errorf("%w: ad payload: %v", ErrInvalidSignature, err)
	}
	if !bytes.Equal(payload, want) {
		return "", fmt.Errorf("%w: signed payload does not match PreviousID, Entries, Provider, Addresses, Metadata and IsRm", ErrInvalidSignature)
	}
	if err := ad.verifyExtended(); err != nil {
		return "", err
	}
	return signer, nil
}

func (ad *Advertisement) verifyExtended() error {
	ep := ad.ExtendedProvider
	if ep == nil {
		return nil
	}
	if ad.IsRm {
		return fmt.Errorf("%w: IsRm advertisement has an ExtendedProvider", ErrInvalidSignature)
	}
	if len(ep.Providers) > 0 && !ad.listsProvider() {
		return fmt.Errorf("%w: ExtendedProvider.Providers lacks the Provider %s", ErrInvalidSignature, ad.Provider)
	}
	for i := range ep.Providers {
		p := &ep.Providers[i]
		if len(p.Signature) == 0 {
			return fmt.Errorf("%w: extended provider %s: not signed", ErrInvalidSignature, p.ID)
		}
		payload, signer, err := open(ExtendedProviderSignatureType, p.Signature)
		if err != nil {
			return fmt.Errorf("%w: extended provider %s: envelope: %v", ErrInvalidSignature, p.ID, err)
		}
		want, err := extendedPayload(ad, p)
		if err != nil {
			return fmt.Errorf("%w: extended provider %s: %v", ErrInvalidSignature, p.ID, err)
		}
		if !bytes.Equal(payload, want) {
			return fmt.Errorf("%w: extended provider %s: signed payload does not match the ad and the entry", ErrInvalidSignature, p.ID)
		}
		id, err := peer.Decode(p.ID)
		if err != nil {
			return fmt.Errorf("%w: extended provider %q: ID is not a peer ID: %v", ErrInvalidSignature, p.ID, err)
		}
		if signer != id {
			return fmt.Errorf("%w: extended provider %s: signed by %s, not by its own key", ErrInvalidSignature, p.ID, signer)
		}
	}
	return nil
}
