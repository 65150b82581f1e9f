//go:build !linux

package pebble

// newArena allocates n bytes on the Go heap (on Linux, run arenas are
// mapped outside it).
func newArena(n int) ([]byte, error) { return make([]byte, n), nil }

// releaseArena zeroes a, as a released Linux mapping reads.
func releaseArena(a []byte) { clear(a) }

func freeArena([]byte) {}
