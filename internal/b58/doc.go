// Package b58 decodes base58 (the Bitcoin alphabet, which multihashes and
// CIDv0 use) without the allocations and the digit-at-a-time arithmetic of
// a general decoder: it is the first step of every GET /multihash/{key}.
//
// [AppendDecode] reads ten digits per multiplication into 64-bit limbs on
// the stack (inputs up to 340 digits; longer ones use the heap) and appends
// the bytes to a caller's buffer. It decodes exactly what
// github.com/mr-tron/base58 decodes, which a fuzz test checks: leading '1'
// digits are zero bytes, and an empty string or a character outside the
// alphabet is an error.
package b58
