package publishercmd_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/indexkit/indexkit/examples/internal/cmd/publishercmd"
	"github.com/indexkit/indexkit/examples/internal/logtap"
)

// The publisher program in process: two publishers on free ports, whose
// addresses the log tells, stopped by the caller's cancel.
func ExampleMain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	tap := logtap.New(io.Discard)
	done := make(chan error, 1)
	go func() {
		done <- publishercmd.Main(run, []string{"-listen", "127.0.0.1:0", "-publishers", "2", "-max-ads", "2"}, tap)
		tap.Close()
	}()
	if _, err := tap.WaitMsg(ctx, "starting"); err != nil {
		panic(err)
	}
	for _, name := range []string{"publisher-0", "publisher-1"} {
		_, err := tap.Addr(ctx, name)
		fmt.Println(name, "listening:", err == nil)
	}
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// publisher-0 listening: true
	// publisher-1 listening: true
	// stopped: <nil>
}
