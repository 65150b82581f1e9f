package schema

import (
	"encoding/base64"
	"strconv"

	"github.com/ipfs/go-cid"
)

// The dag-json fast path. It writes exactly what go-ipld-prime's dag-json
// encoder writes for the IPNI schema (the tests compare the two on random
// and fuzzed values): map keys in bytewise order, no whitespace, bytes as
// {"/":{"bytes":"<base64 std, unpadded>"}}, links as {"/":"<cid>"}, absent
// optional fields omitted. Strings are copied only when every byte is
// printable ASCII other than '"' and '\'; for any other string the append
// functions report false and the caller falls back to go-ipld-prime, so
// that escaping always matches the reference.

func appendAdJSON(b []byte, ad *Advertisement) ([]byte, bool) {
	var ok bool
	b = append(b, `{"Addresses":`...)
	if b, ok = appendStrings(b, ad.Addresses); !ok {
		return nil, false
	}
	b = append(b, `,"ContextID":`...)
	b = appendBytes(b, ad.ContextID)
	b = append(b, `,"Entries":`...)
	b = appendLink(b, ad.Entries)
	if ep := ad.ExtendedProvider; ep != nil {
		b = append(b, `,"ExtendedProvider":{"Override":`...)
		b = strconv.AppendBool(b, ep.Override)
		b = append(b, `,"Providers":[`...)
		for i := range ep.Providers {
			p := &ep.Providers[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Addresses":`...)
			if b, ok = appendStrings(b, p.Addresses); !ok {
				return nil, false
			}
			b = append(b, `,"ID":`...)
			if b, ok = appendString(b, p.ID); !ok {
				return nil, false
			}
			b = append(b, `,"Metadata":`...)
			b = appendBytes(b, p.Metadata)
			b = append(b, `,"Signature":`...)
			b = appendBytes(b, p.Signature)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	b = append(b, `,"IsRm":`...)
	b = strconv.AppendBool(b, ad.IsRm)
	b = append(b, `,"Metadata":`...)
	b = appendBytes(b, ad.Metadata)
	if ad.PreviousID.Defined() {
		b = append(b, `,"PreviousID":`...)
		b = appendLink(b, ad.PreviousID)
	}
	b = append(b, `,"Provider":`...)
	if b, ok = appendString(b, ad.Provider); !ok {
		return nil, false
	}
	b = append(b, `,"Signature":`...)
	b = appendBytes(b, ad.Signature)
	return append(b, '}'), true
}

func appendChunkJSON(b []byte, ch *EntryChunk) []byte {
	b = append(b, `{"Entries":[`...)
	for i, e := range ch.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBytes(b, e)
	}
	b = append(b, ']')
	if ch.Next.Defined() {
		b = append(b, `,"Next":`...)
		b = appendLink(b, ch.Next)
	}
	return append(b, '}')
}

// Sizes to allocate the output once; estimates, exact for the common case.
const (
	bytesOverhead = len(`{"/":{"bytes":""}}`)
	linkOverhead  = len(`{"/":""}`)
	cidTextLen    = 64 // a sha2-256 CIDv1 in base32 is 59 characters
)

func adJSONSize(ad *Advertisement) int {
	n := 160 + 2*linkOverhead + 2*cidTextLen + len(ad.Provider) +
		b64Len(ad.ContextID) + b64Len(ad.Metadata) + b64Len(ad.Signature)
	for _, a := range ad.Addresses {
		n += len(a) + 3
	}
	if ep := ad.ExtendedProvider; ep != nil {
		for _, p := range ep.Providers {
			n += 60 + len(p.ID) + b64Len(p.Metadata) + b64Len(p.Signature)
			for _, a := range p.Addresses {
				n += len(a) + 3
			}
		}
	}
	return n
}

func chunkJSONSize(ch *EntryChunk) int {
	n := 32 + linkOverhead + cidTextLen
	for _, e := range ch.Entries {
		n += b64Len(e) + 1
	}
	return n
}

func b64Len(p []byte) int { return bytesOverhead + base64.RawStdEncoding.EncodedLen(len(p)) }

func appendBytes(b, p []byte) []byte {
	b = append(b, `{"/":{"bytes":"`...)
	b = base64.RawStdEncoding.AppendEncode(b, p)
	return append(b, `"}}`...)
}

func appendLink(b []byte, c cid.Cid) []byte {
	b = append(b, `{"/":"`...)
	b = append(b, c.String()...)
	return append(b, `"}`...)
}

func appendStrings(b []byte, ss []string) ([]byte, bool) {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendString(b, s); !ok {
			return nil, false
		}
	}
	return append(b, ']'), true
}

// appendString quotes s if it needs no escaping, else reports false.
func appendString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
