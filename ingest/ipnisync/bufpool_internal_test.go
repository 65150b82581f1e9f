package ipnisync

import "testing"

// Buffers come in classes of powers of two from 4 KiB to 4 MiB; getBuf
// returns the length asked for with its class's capacity, and putBuf keeps
// only buffers of a class's capacity, so that a class never holds one too
// small for it.
func TestBufClasses(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		class int
	}{{0, 0}, {1, 0}, {4096, 0}, {4097, 1}, {8192, 1}, {60_000, 4}, {65_536, 4}, {65_537, 5}, {4 << 20, 10}, {4<<20 + 1, -1}} {
		if got := bufClass(tc.n); got != tc.class {
			t.Errorf("bufClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		b := getBuf(tc.n)
		if int64(len(b)) != tc.n {
			t.Fatalf("getBuf(%d): length %d", tc.n, len(b))
		}
		if tc.class >= 0 && cap(b) != 4096<<tc.class {
			t.Errorf("getBuf(%d): capacity %d, want %d", tc.n, cap(b), 4096<<tc.class)
		}
		putBuf(b)
	}
	// A buffer of another capacity is not kept: were it, a later getBuf of
	// its class could return one shorter than asked (and panic slicing it).
	putBuf(make([]byte, 5000))
	for range 100 {
		if b := getBuf(8192); cap(b) != 8192 {
			t.Fatalf("getBuf(8192): capacity %d", cap(b))
		}
	}
}
