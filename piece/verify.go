package piece

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

var (
	// ErrBadSignature is returned (wrapped) by [VerifySample] when the
	// signature does not cover the answer for the request.
	ErrBadSignature = errors.New("piece: sample signature does not verify")
	// ErrUnexpectedServer is returned (wrapped) by [VerifySample] when the
	// answer is signed by another key than the one required by
	// [WithServer].
	ErrUnexpectedServer = errors.New("piece: sample signed by an unexpected server")
)

// SampleResponse is the JSON body of a sample answer (200 or 404).
type SampleResponse struct {
	Samples   []string `json:"samples,omitempty"`
	Error     string   `json:"error,omitempty"`
	PubKey    string   `json:"pubkey"`
	Signature string   `json:"signature"`
}

// VerifiedSample is an answer whose signature [VerifySample] checked.
type VerifiedSample struct {
	// Samples are the chosen payloads of a 200 answer; nil for a 404.
	Samples []cid.Cid
	// Error is "" for a 200 answer, else the signed code
	// ([CodeProviderNotFound] or [CodePieceNotFound]): a verified "not
	// found" is a valid answer, not a verification failure.
	Error string
	// Server is the peer ID of the key that signed.
	Server peer.ID
}

// VerifyOption configures [VerifySample] and [SampleResponse.Verify].
type VerifyOption func(*verifyConfig) error

// verifyConfig is what the options of VerifySample set.
type verifyConfig struct{ server peer.ID }

// WithServer requires the answer to be signed by the key of server; without
// it any key verifies, which proves only that whoever holds the key in the
// answer signed it.
func WithServer(server peer.ID) VerifyOption {
	return func(c *verifyConfig) error { c.server = server; return nil }
}

// VerifySample checks body, the JSON body of an answer to
// GET /sample/{provider}/{pieceCid}?seed={seed}, and returns what it
// verified. It rebuilds [SignedBytes] from the request (provider, pieceCid,
// seed) and the answer's samples or error code, and checks the signature
// with the answer's pubkey (and, with [WithServer], that the pubkey is the
// expected server's). Errors wrap [ErrBadSignature] or
// [ErrUnexpectedServer], or name what in body is malformed.
func VerifySample(body []byte, provider peer.ID, pieceCid cid.Cid, seed string, opts ...VerifyOption) (VerifiedSample, error) {
	var r SampleResponse
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: body is not a sample answer: %w", err)
	}
	if dec.More() {
		return VerifiedSample{}, errors.New("piece: verify sample: trailing data after the answer")
	}
	return r.Verify(provider, pieceCid, seed, opts...)
}

// Verify is [VerifySample] on a decoded answer.
func (r *SampleResponse) Verify(provider peer.ID, pieceCid cid.Cid, seed string, opts ...VerifyOption) (VerifiedSample, error) {
	var c verifyConfig
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return VerifiedSample{}, fmt.Errorf("piece: verify sample: %w", err)
		}
	}
	var v VerifiedSample
	switch {
	case r.Error != "" && r.Samples != nil:
		return v, errors.New("piece: verify sample: answer has both samples and an error")
	case r.Error == "" && r.Samples == nil:
		return v, errors.New("piece: verify sample: answer has neither samples nor an error")
	case r.Error != "" && r.Error != CodeProviderNotFound && r.Error != CodePieceNotFound:
		return v, fmt.Errorf("piece: verify sample: unknown error code %q", clip(r.Error))
	}
	if r.Error == "" {
		v.Samples = make([]cid.Cid, len(r.Samples))
		for i, s := range r.Samples {
			sc, err := cid.Decode(s)
			if err != nil {
				return VerifiedSample{}, fmt.Errorf("piece: verify sample: sample %d %q is not a CID: %w", i, clip(s), err)
			}
			v.Samples[i] = sc
		}
	}
	v.Error = r.Error
	pub, err := DecodePubKey(r.PubKey)
	if err != nil {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: %w", err)
	}
	if v.Server, err = peer.IDFromPublicKey(pub); err != nil {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: pubkey: %w", err)
	}
	if c.server != "" && v.Server != c.server {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: signed by %s, want %s: %w", v.Server, c.server, ErrUnexpectedServer)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	if err != nil {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: signature is not standard base64: %w", err)
	}
	msg, err := SignedBytes(provider, pieceCid, seed, r.Samples, r.Error)
	if err != nil {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: %w", err)
	}
	ok, err := pub.Verify(msg, sig)
	if err != nil || !ok {
		return VerifiedSample{}, fmt.Errorf("piece: verify sample: %w", ErrBadSignature)
	}
	return v, nil
}
