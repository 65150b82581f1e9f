package netproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/indexkit/indexkit/internal/testbed/netproxy"
)

// A proxy between a client and an echo server: delayed, then cut.
func Example() {
	// The real server: an echo server on loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()

	p, err := netproxy.Listen(ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer p.Close()
	p.SetDelay(20*time.Millisecond, 10*time.Millisecond) // a 30 ms round trip

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("%q %v, delayed: %v\n", line, err, time.Since(start) >= 30*time.Millisecond)

	fmt.Println("cut:", p.Cut())
	_, err = c.Read(make([]byte, 1))
	fmt.Println("read after cut:", err)
	// Output:
	// "hello\n" <nil>, delayed: true
	// cut: 1
	// read after cut: EOF
}
