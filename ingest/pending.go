package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/indexkit/indexkit/ingest/schema"
)

// pending is one collected advertisement, as the walker keeps it under
// q/<i> until it is applied.
//
// This version writes the advertisement it decoded while collecting it in
// a compact binary form (flagCompact), not its block: applying it then
// decodes no dag-json or dag-cbor a second time, and the walker state
// takes a third of the bytes (the block carries its signature envelope in
// base64 and every field as text). Values written by earlier versions
// hold the block, and are decoded from it when applied.
type pending struct {
	flags  byte
	cid    cid.Cid
	signer peer.ID               // with flagVerified: the verified signer ("" for an accepted unsigned ad)
	ad     *schema.Advertisement // with flagCompact: the decoded advertisement
	block  []byte                // without flagCompact: the advertisement's block
}

// encode returns the value of p: the compact form of p.ad if it is set
// (and flagCompact is then set in the flags written), else p.block.
func (p pending) encode() []byte {
	cb := p.cid.Bytes()
	flags := p.flags &^ flagCompact
	if p.ad != nil {
		flags |= flagCompact
	}
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(cb)+len(p.signer)+len(p.block)+compactSize(p.ad))
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(cb)))
	b = append(b, cb...)
	if flags&flagVerified != 0 {
		b = binary.AppendUvarint(b, uint64(len(p.signer)))
		b = append(b, p.signer...)
	}
	if p.ad != nil {
		return appendCompactAd(b, p.ad)
	}
	return append(b, p.block...)
}

// decodePending decodes a value of q/<i>. The pending it returns shares
// b's bytes.
func decodePending(b []byte) (pending, error) {
	var p pending
	if len(b) < 2 {
		return p, errors.New("corrupt pending advertisement: too short")
	}
	p.flags = b[0]
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return p, errors.New("corrupt pending advertisement: bad CID length")
	}
	rest := b[1+k:]
	_, c, err := cid.CidFromBytes(rest[:n])
	if err != nil {
		return p, fmt.Errorf("corrupt pending advertisement: %w", err)
	}
	p.cid, rest = c, rest[n:]
	if p.flags&flagVerified != 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return p, errors.New("corrupt pending advertisement: bad signer length")
		}
		p.signer, rest = peer.ID(rest[k:k+int(n)]), rest[k+int(n):]
	}
	if p.flags&flagCompact == 0 {
		p.block = rest
		return p, nil
	}
	if p.ad, err = decodeCompactAd(rest); err != nil {
		return p, fmt.Errorf("corrupt pending advertisement %s: %w", p.cid, err)
	}
	return p, nil
}

// The compact form of an advertisement: each field of
// [schema.Advertisement] in order, a byte string or text as a uvarint
// length and its bytes, a list as a uvarint count and its items, a CID
// as its bytes (empty: cid.Undef), a bool as one byte:
//
//	PreviousID Provider Addresses Signature Entries ContextID Metadata IsRm
//	ExtendedProvider: 0 (none) or 1, Override, then Providers, each
//	                  ID Addresses Metadata Signature
//
// It is a private format of the walker state, read back by the version
// that wrote it or a newer one: a field added to schema.Advertisement
// needs a new flag (TestCompactAdFields fails until it has one).

// compactSize is about the size of ad's compact form (nil: 0).
func compactSize(ad *schema.Advertisement) int {
	if ad == nil {
		return 0
	}
	n := 128 + len(ad.Provider) + len(ad.Signature) + len(ad.ContextID) + len(ad.Metadata)
	for _, a := range ad.Addresses {
		n += len(a) + binary.MaxVarintLen64
	}
	if ep := ad.ExtendedProvider; ep != nil {
		for _, p := range ep.Providers {
			n += 4*binary.MaxVarintLen64 + len(p.ID) + len(p.Metadata) + len(p.Signature)
			for _, a := range p.Addresses {
				n += len(a) + binary.MaxVarintLen64
			}
		}
	}
	return n
}

func appendField(b, f []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

func appendText(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTexts(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendText(b, s)
	}
	return b
}

func appendCid(b []byte, c cid.Cid) []byte {
	if !c.Defined() {
		return appendField(b, nil)
	}
	return appendField(b, c.Bytes())
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendCompactAd appends the compact form of ad to b.
func appendCompactAd(b []byte, ad *schema.Advertisement) []byte {
	b = appendCid(b, ad.PreviousID)
	b = appendText(b, ad.Provider)
	b = appendTexts(b, ad.Addresses)
	b = appendField(b, ad.Signature)
	b = appendCid(b, ad.Entries)
	b = appendField(b, ad.ContextID)
	b = appendField(b, ad.Metadata)
	b = appendBool(b, ad.IsRm)
	ep := ad.ExtendedProvider
	b = appendBool(b, ep != nil)
	if ep == nil {
		return b
	}
	b = appendBool(b, ep.Override)
	b = binary.AppendUvarint(b, uint64(len(ep.Providers)))
	for _, p := range ep.Providers {
		b = appendText(b, p.ID)
		b = appendTexts(b, p.Addresses)
		b = appendField(b, p.Metadata)
		b = appendField(b, p.Signature)
	}
	return b
}

// compactReader reads a compact form; the first error sticks, and every
// read after it returns zero values.
type compactReader struct {
	b   []byte
	err error
}

func (r *compactReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("bad %s", what)
	}
	r.b = nil
}

// count reads a uvarint that counts items of at least one byte each.
func (r *compactReader) count(what string) int {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)-k) {
		r.fail(what)
		return 0
	}
	r.b = r.b[k:]
	return int(n)
}

// field reads a byte string; empty is nil.
func (r *compactReader) field(what string) []byte {
	n := r.count(what)
	if n == 0 {
		return nil
	}
	f := r.b[:n:n]
	r.b = r.b[n:]
	return f
}

func (r *compactReader) text(what string) string { return string(r.field(what)) }

func (r *compactReader) texts(what string) []string {
	n := r.count(what)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.text(what)
	}
	return ss
}

func (r *compactReader) cid(what string) cid.Cid {
	f := r.field(what)
	if f == nil {
		return cid.Undef
	}
	k, c, err := cid.CidFromBytes(f)
	if err != nil || k != len(f) {
		r.fail(what)
		return cid.Undef
	}
	return c
}

func (r *compactReader) bool(what string) bool {
	if len(r.b) == 0 || r.b[0] > 1 {
		r.fail(what)
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

// decodeCompactAd decodes the compact form of an advertisement, which
// must fill b, and validates it ([schema.Advertisement.Validate]). The
// advertisement shares b's bytes.
func decodeCompactAd(b []byte) (*schema.Advertisement, error) {
	r := &compactReader{b: b}
	ad := &schema.Advertisement{
		PreviousID: r.cid("PreviousID"),
		Provider:   r.text("Provider"),
		Addresses:  r.texts("Addresses"),
		Signature:  r.field("Signature"),
		Entries:    r.cid("Entries"),
		ContextID:  r.field("ContextID"),
		Metadata:   r.field("Metadata"),
		IsRm:       r.bool("IsRm"),
	}
	if r.bool("ExtendedProvider") {
		ep := &schema.ExtendedProvider{Override: r.bool("Override")}
		if n := r.count("Providers"); n > 0 {
			ep.Providers = make([]schema.ProviderEntry, n)
			for i := range ep.Providers {
				ep.Providers[i] = schema.ProviderEntry{
					ID:        r.text("provider ID"),
					Addresses: r.texts("provider Addresses"),
					Metadata:  r.field("provider Metadata"),
					Signature: r.field("provider Signature"),
				}
			}
		}
		ad.ExtendedProvider = ep
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the advertisement", len(r.b))
	}
	if err := ad.Validate(); err != nil {
		return nil, err
	}
	return ad, nil
}
