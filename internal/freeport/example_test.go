package freeport_test

import (
	"fmt"
	"net"
	"strconv"

	"github.com/indexkit/indexkit/internal/freeport"
)

// A server that must be given its port up front gets one from Pick, and
// picks again if its bind fails.
func ExamplePick() {
	port, err := freeport.Pick(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Println("taken meanwhile; pick again:", err)
		return
	}
	defer l.Close()
	fmt.Println(port >= freeport.Low && port < freeport.High)
	// Output: true
}
