package b58

import (
	"errors"
	"fmt"
	"math/bits"
)

const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// digits maps a byte to its base58 value, or 0xff.
var digits = func() (d [256]byte) {
	for i := range d {
		d[i] = 0xff
	}
	for i := range len(alphabet) {
		d[alphabet[i]] = byte(i)
	}
	return d
}()

// pow58 holds 58^i for i in 0..10; 58^10 < 2^64.
var pow58 = func() (p [11]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 58
	}
	return p
}()

// ErrEmpty is the error of decoding an empty string.
var ErrEmpty = errors.New("b58: empty string")

// stackLimbs is how many 64-bit limbs AppendDecode keeps on the stack:
// 2,048 bits, what 349 digits can hold.
const stackLimbs = 32

// AppendDecode appends the bytes s encodes in base58 to dst and returns
// the extended buffer. It fails on an empty s and on a character outside
// the alphabet, naming it and its position.
func AppendDecode(dst []byte, s string) ([]byte, error) {
	if len(s) == 0 {
		return dst, ErrEmpty
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	// The number, little-endian in 64-bit limbs: each digit adds
	// log2(58) < 5.86 bits.
	need := (len(s)-zeros)*586/100/64 + 1
	var stack [stackLimbs]uint64
	limbs := stack[:0]
	if need > stackLimbs {
		limbs = make([]uint64, 0, need)
	}
	for i := zeros; i < len(s); {
		n := min(10, len(s)-i)
		var chunk uint64
		for _, c := range []byte(s[i : i+n]) {
			d := digits[c]
			if d == 0xff {
				return dst, invalid(s, i)
			}
			chunk = chunk*58 + uint64(d)
			i++
		}
		mul, carry := pow58[n], chunk
		for j := range limbs {
			hi, lo := bits.Mul64(limbs[j], mul)
			var c uint64
			limbs[j], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		if carry != 0 {
			limbs = append(limbs, carry)
		}
	}
	for range zeros {
		dst = append(dst, 0)
	}
	// Big-endian bytes of the number, without leading zero bytes.
	started := false
	for j := len(limbs) - 1; j >= 0; j-- {
		for shift := 56; shift >= 0; shift -= 8 {
			b := byte(limbs[j] >> shift)
			if b == 0 && !started {
				continue
			}
			started = true
			dst = append(dst, b)
		}
	}
	return dst, nil
}

// invalid returns the error of the first character of s, from i on, that
// is not a base58 digit.
func invalid(s string, i int) error {
	for ; i < len(s); i++ {
		if digits[s[i]] == 0xff {
			break
		}
	}
	return fmt.Errorf("b58: invalid character %q at %d", s[i:i+1], i)
}

// Decode returns the bytes s encodes in base58; see [AppendDecode].
func Decode(s string) ([]byte, error) {
	return AppendDecode(nil, s)
}
