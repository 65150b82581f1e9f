package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// Low and High bound the ports Pick returns: [Low, High).
const Low, High = 20000, 32768

// tries bounds the random runs Pick checks.
const tries = 200

// Pick returns the first of n consecutive ports of 127.0.0.1 that were
// free a moment ago (each bound, then released).
func Pick(n int) (int, error) {
	if n < 1 || n > High-Low {
		return 0, fmt.Errorf("freeport: cannot pick %d consecutive ports", n)
	}
	var last error
	for range tries {
		base := Low + rand.IntN(High-Low-n+1)
		lns := make([]net.Listener, 0, n)
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				last = err
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if len(lns) == n {
			return base, nil
		}
	}
	return 0, fmt.Errorf("freeport: no %d consecutive free ports in %d tries: %w", n, tries, last)
}
