package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPick(t *testing.T) {
	for _, n := range []int{1, 3} {
		base, err := Pick(n)
		if err != nil {
			t.Fatal(err)
		}
		if base < Low || base+n > High {
			t.Fatalf("Pick(%d) = %d, outside [%d, %d)", n, base, Low, High)
		}
		// Every port of the run can be bound now.
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				t.Fatalf("Pick(%d) = %d, but port %d: %v", n, base, base+i, err)
			}
			l.Close()
		}
	}
}

func TestPickSkipsTakenPorts(t *testing.T) {
	// Take a whole run; Pick never returns a run that overlaps it.
	base, err := Pick(8)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Listener
	for i := range 8 {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 200 {
		p, err := Pick(2)
		if err != nil {
			t.Fatal(err)
		}
		if p+1 >= base && p < base+8 {
			t.Fatalf("Pick(2) = %d overlaps the held run %d-%d", p, base, base+7)
		}
	}
}

func TestPickBadCount(t *testing.T) {
	for _, n := range []int{0, -1, High} {
		if _, err := Pick(n); err == nil {
			t.Errorf("Pick(%d): no error", n)
		}
	}
}
