package logtap_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/scattercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// A scatter front end runs in a goroutine on a free port; the tap on its
// log tells where it listens.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tap := logtap.New(nil) // or logtap.New(os.Stderr) to see the log too
	done := make(chan error, 1)
	go func() {
		done <- scattercmd.Main(ctx, []string{"-listen", "127.0.0.1:0", "-metrics", "",
			"-backends", "http://127.0.0.1:9"}, tap)
		tap.Close()
	}()

	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	addr, err := tap.Addr(wctx, "find")
	if err != nil {
		fmt.Println(err)
		return
	}
	host, _, _ := net.SplitHostPort(addr)
	fmt.Println("find API on", host)

	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// find API on 127.0.0.1
	// stopped: <nil>
}
