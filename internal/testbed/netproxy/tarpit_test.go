package netproxy_test

import (
	"net"
	"testing"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/netproxy"
)

func TestTarpitNeverAnswers(t *testing.T) {
	tp, err := netproxy.ListenTarpit()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", tp.Addr().String(), time.Second)
	if err != nil {
		t.Fatalf("the tarpit did not accept: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !isTimeout(err) {
		t.Fatalf("read from the tarpit: %d bytes, %v; want a timeout", n, err)
	}
	for tp.Accepted() != 1 {
		time.Sleep(time.Millisecond)
	}
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
