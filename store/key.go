package store

import (
	"encoding/binary"

	"github.com/multiformats/go-multihash"
)

// DigestPrefixLen is how many bytes of a long cryptographic digest a store
// keyed on digest prefixes keeps (see [AppendIndexKey]): 160 bits.
const DigestPrefixLen = 20

// AppendIndexKey appends to dst the form under which a store keyed on
// digest prefixes (store/pebble's WithDigestPrefixKeys) keeps mh, which
// is also what its All yields: a multihash of a cryptographic hash
// function whose digest is longer than [DigestPrefixLen] bytes becomes
// the same code with a header length of DigestPrefixLen and the first
// DigestPrefixLen bytes of the digest (a valid multihash of a truncated
// digest); any other multihash (identity, short digests, codes not listed
// below) is appended as it is. The form of a form is itself, so comparing
// the forms of two multihashes tells whether such a store keeps them as
// one entry. mh must be valid ([ValidateMultihash]).
//
// The hash functions whose digests are cut: sha2-224, -256, -384, -512,
// -512/224, -512/256 and sha2-256-trunc254-padded (Filecoin piece
// commitments); sha3-224 to -512, shake-128, shake-256 and keccak-224 to
// -512; blake2b and blake2s of every length; blake3.
//
// Two distinct multihashes share a form only if they have the same code
// and the same first 160 bits of digest. By chance, among n multihashes
// that happens with probability below n²/2¹⁶¹: about 3·10⁻¹⁹ at n = 10¹⁵.
// On purpose, it takes either a second preimage of 160 bits of the hash
// (some 2¹⁶⁰ hashes), or a multihash of the victim's digest truncated to
// 20 bytes, which anyone can write down: what the store then answers for
// the victim's multihash is the records of whoever published that
// truncated form, exactly as if they had published the victim's
// multihash itself, which nothing in IPNI prevents them from doing.
func AppendIndexKey(dst []byte, mh multihash.Multihash) []byte {
	code, n := binary.Uvarint(mh)
	size, k := binary.Uvarint(mh[n:])
	if size <= DigestPrefixLen || !cryptographic(code) {
		return append(dst, mh...)
	}
	dst = append(dst, mh[:n]...)
	dst = append(dst, DigestPrefixLen) // a one-byte uvarint
	return append(dst, mh[n+k:n+k+DigestPrefixLen]...)
}

// IndexKey returns [AppendIndexKey] of mh in a new slice.
func IndexKey(mh multihash.Multihash) multihash.Multihash {
	return AppendIndexKey(make(multihash.Multihash, 0, min(len(mh), 4+DigestPrefixLen)), mh)
}

// cryptographic reports whether code is a hash function whose digest
// prefixes are as collision-resistant as their length says.
func cryptographic(code uint64) bool {
	switch {
	case code >= 0x12 && code <= 0x1e, // sha2-256, sha2-512, sha3-*, shake-*, keccak-*, blake3
		code == 0x20,                     // sha2-384
		code >= 0x1012 && code <= 0x1015, // sha2-256-trunc254-padded, sha2-224, sha2-512/224, sha2-512/256
		code >= 0xb201 && code <= 0xb260: // blake2b-8 to -512, blake2s-8 to -256
		return true
	}
	return false
}
